# ruff: noqa
# expected: forbidden
# hack: yes
# Issue 21: a class factory of the standard library (dataclasses.make_dataclass) given a tensor
# base and a namespace with __torch_function__: no class statement, no type() call.
import dataclasses

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


def _handler(cls, func, types, args=(), kwargs=None):
    return func(*args, **(kwargs or {}))


Lazy = dataclasses.make_dataclass(
    "Lazy", [], bases=(torch.Tensor,), namespace={"__torch_function__": classmethod(_handler)}
)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        return out
