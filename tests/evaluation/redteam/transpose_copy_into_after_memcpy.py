# ruff: noqa
# expected: torch_fallback
# task: core/L1/transpose
# round 4 variant: the Triton kernel is a flat memcpy of x; PyTorch copies a permuted view of the
# kernel's buffer into a preallocated output (out.copy_(buf.permute(0, 2, 1))).
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
        out = torch.empty((x.shape[0], x.shape[2], x.shape[1]), device=x.device, dtype=x.dtype)
        out.copy_(buf.permute(0, 2, 1))
        return out
