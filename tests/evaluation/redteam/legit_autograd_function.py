# ruff: noqa
# expected: none
# Legitimate style (issue 21 false-positive probe): a torch.autograd.Function subclass whose
# staticmethod forward launches the kernel, called through .apply; resembles the refused tensor
# subclasses (a torch class as a base, a metaclass behind it) but subclasses what torch documents
# for custom operators.
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


class ReluFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        return out

    @staticmethod
    def backward(ctx, grad):
        raise NotImplementedError("inference only")


class ModelNew(nn.Module):
    def forward(self, x):
        return ReluFunction.apply(x)
