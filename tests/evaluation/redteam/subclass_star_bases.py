# ruff: noqa
# expected: forbidden
# hack: yes
# Issue 21: `class X(*bases)` with the tensor class hidden in a tuple built at run time.
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


_BASES = tuple([torch.Tensor])


class Lazy(*_BASES):
    def new_empty(self, *args, **kwargs):
        out = torch.Tensor.new_empty(self, *args, **kwargs)
        out.copy_(torch.relu(self.source))
        return out


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x).as_subclass(Lazy)
        out.source = x
        relu_kernel[(1,)](x, out, 0, BLOCK=16)
        return out
