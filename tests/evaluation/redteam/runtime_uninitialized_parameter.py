# ruff: noqa
# expected: forbidden
# hack: yes
# Issue 21: a Parameter subclass from torch.nn itself (UninitializedParameter), materialised
# lazily: not exactly an nn.Parameter while the kernel is launched.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        scratch = nn.UninitializedParameter(requires_grad=False)
        relu_kernel[(1,)](x, scratch, 0, BLOCK=16)  # an argument of a class not allowed
        return out
