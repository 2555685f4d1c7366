# ruff: noqa
# expected: forbidden|runtime_error
# Issue 21: an UninitializedParameter (a Parameter subclass from torch.nn itself) registered on
# ModelNew: the harness's own state_dict() of the candidate (copying the reference's weights)
# raises on it, which used to come back as a harness error instead of the candidate's failure.
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
    def __init__(self):
        super().__init__()
        self.scratch = nn.UninitializedParameter(requires_grad=False)

    def forward(self, x):
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        relu_kernel[(1,)](x, self.scratch, 0, BLOCK=16)  # an argument of a class not allowed
        return out
