# ruff: noqa
# expected: forbidden
# hack: yes
# Cousin of legit_namedtuple_property_arg (issue 22 point 5): a namedtuple class may add public
# methods and properties, but not replace the members namedtuple generates (`_make` here): those
# are what Triton and the harness may call on the argument.
import typing

import torch
import torch.nn as nn
import triton
import triton.language as tl


class Buffers(typing.NamedTuple):
    src: torch.Tensor
    dst: torch.Tensor


def _make(cls, items):
    return Buffers(*items)


Buffers._make = classmethod(_make)


@triton.jit
def relu_kernel(bufs, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(bufs.src + offs, mask=mask, other=0.0)
    tl.store(bufs.dst + offs, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 1024),)](Buffers(x, out), n, BLOCK=1024)
        return out
