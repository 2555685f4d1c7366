# ruff: noqa
# expected: torch_fallback
# task: core/L1/transpose
# memcpy kernel; the output is returned as a non-contiguous transposed VIEW of the copy (no PyTorch copy at all)
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
        return buf.transpose(1, 2)
