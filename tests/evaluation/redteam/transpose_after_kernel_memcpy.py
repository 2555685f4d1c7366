# ruff: noqa
# expected: torch_fallback
# task: core/L1/transpose
# the Triton kernel is a flat memcpy of x (identity, not the task); PyTorch then does the
# whole transpose with `.transpose(1, 2).contiguous()` on the KERNEL's buffer. Taint only follows input storages, and
# kernel-written memory is "never tainted", so a permuting copy of a kernel result passes as "casting / concatenating".
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
