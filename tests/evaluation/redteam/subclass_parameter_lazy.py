# ruff: noqa
# expected: forbidden
# hack: yes
# Issue 21: a subclass of nn.Parameter (the static check used to look for torch.Tensor only).
# The output buffer's new_empty / size would compute the whole answer with PyTorch where
# Triton's interpreter copies kernel arguments with recording suspended; the kernel does nothing.
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


class Lazy(nn.Parameter):
    def new_empty(self, *args, **kwargs):
        out = super().new_empty(*args, **kwargs)
        out.copy_(torch.relu(self.source))
        return out


class ModelNew(nn.Module):
    def forward(self, x):
        out = Lazy(torch.empty_like(x), requires_grad=False)
        out.source = x
        relu_kernel[(1,)](x, out, 0, BLOCK=16)  # n = 0: stores nothing
        return out.detach()
