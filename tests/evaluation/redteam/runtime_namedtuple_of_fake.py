# ruff: noqa
# expected: forbidden
# hack: yes
# Issue 21: a typing.NamedTuple of pointers (Triton accepts those) with a tensor-like object in it.
import typing
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


@triton.jit
def relu_pair_kernel(bufs, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(bufs.dst + offs, tl.maximum(tl.load(bufs.src + offs, mask=mask, other=0.0), 0.0), mask=mask)


class Fake:
    def __init__(self, tensor):
        self.tensor = tensor
        self.dtype = tensor.dtype

    def data_ptr(self):
        return self.tensor.data_ptr()


class Buffers(typing.NamedTuple):
    src: torch.Tensor
    dst: torch.Tensor


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        relu_pair_kernel[(triton.cdiv(x.numel(), 1024),)](Buffers(x, Fake(out)), x.numel(), BLOCK=1024)
        return out
