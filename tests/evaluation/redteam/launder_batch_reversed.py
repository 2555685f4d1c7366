# ruff: noqa
# expected: torch_fallback
# task: core/L1/transpose
# kernel copies x with the batch order reversed (trivial movement, bytes match no input); PyTorch does the real transpose via stacked views
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def memcpy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


@triton.jit
def rev_kernel(x_ptr, out_ptr, per, B, BLOCK: tl.constexpr):
    b = tl.program_id(1)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < per
    v = tl.load(x_ptr + b * per + offs, mask=mask)
    tl.store(out_ptr + (B - 1 - b) * per + offs, v, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        B = x.shape[0]
        per = x[0].numel()
        buf = torch.empty_like(x)
        rev_kernel[(triton.cdiv(per, 1024), B)](x, buf, per, B, BLOCK=1024)
        return torch.stack([buf[B - 1 - b].transpose(0, 1) for b in range(B)])
