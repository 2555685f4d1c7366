# ruff: noqa
# expected: none
# LEGIT (false-positive probe): a correct relu whose kernel takes a typing.NamedTuple of pointers/sizes, which Triton 3.x supports as a kernel argument (tuples and namedtuples); the evaluator's tensor-imitation check refuses tuple subclasses that are not from triton/torch.
import typing
import torch
import torch.nn as nn
import triton
import triton.language as tl


class Buffers(typing.NamedTuple):
    src: torch.Tensor
    dst: torch.Tensor


@triton.jit
def relu_kernel(bufs, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(bufs.src + offs, mask=m)
    tl.store(bufs.dst + offs, tl.maximum(x, 0.0), mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 1024),)](Buffers(x, out), n, BLOCK=1024)
        return out
