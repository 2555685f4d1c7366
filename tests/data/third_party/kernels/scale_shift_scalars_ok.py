# task: level1/2_Scale_and_shift_scalars.py
# expected: none
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def affine_kernel(x_ptr, out_ptr, n, alpha, shift, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, x * alpha + shift, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x, alpha, shift):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        affine_kernel[(triton.cdiv(n, 512),)](x, out, n, alpha, shift, BLOCK=512)
        return out
