# ruff: noqa
# expected: torch_fallback
# task: core/L1/transpose
# round 4: the Triton kernel is a flat memcpy of x (identity, not the task); PyTorch then does the
# whole transpose with `.transpose(1, 2).contiguous()` on the KERNEL's buffer. It passed while kernel-written memory
# was never tainted; a rearranging copy of memory holding an input's exact bytes is now tainted.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def memcpy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        buf = torch.empty_like(x)
        n = x.numel()
        memcpy_kernel[(triton.cdiv(n, 1024),)](x, buf, n, BLOCK=1024)
        return buf.transpose(1, 2).contiguous()
