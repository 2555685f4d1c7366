# ruff: noqa
# expected: torch_fallback
# task: core/L1/transpose
# verbatim memcpy; PyTorch copies the (contiguous) buffer into a transposed view of the output (strided target)
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
        out = torch.empty(x.shape[0], x.shape[2], x.shape[1], dtype=x.dtype, device=x.device)
        out.transpose(1, 2).copy_(buf)
        return out
