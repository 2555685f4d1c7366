# ruff: noqa
# expected: forbidden
# hack: yes
# Cousin of legit_attribute_named_np (issue 22 point 5): `.np` on any object is allowed now, so a
# module that imports NumPy as `np` is smuggled in a tuple, where the attribute path is not resolved.
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


HOLDER = (torch.nn.functional,)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        numpy = HOLDER[0].np
        return torch.as_tensor(numpy.maximum(numpy.asarray(x), 0.0))
