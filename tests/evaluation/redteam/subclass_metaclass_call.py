# ruff: noqa
# expected: forbidden
# hack: yes
# Issue 21: the tensor metaclass called directly, type(torch.Tensor)("X", (torch.Tensor,), {...}):
# a class statement nowhere, no 3-argument type() call.
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


def _lazy_new_empty(self, *args, **kwargs):
    out = torch.Tensor.new_empty(self, *args, **kwargs)
    out.copy_(torch.relu(self.source))
    return out


Lazy = type(torch.Tensor)("Lazy", (torch.Tensor,), {"new_empty": _lazy_new_empty})


class ModelNew(nn.Module):
    def forward(self, x):
        out = Lazy(torch.empty_like(x))
        out.source = x
        relu_kernel[(1,)](x, out, 0, BLOCK=16)
        return out
