# ruff: noqa
# expected: forbidden
# hack: yes
# Cousin of legit_namedtuple_property_arg (issue 22 point 5): a property is fine, but not under a
# name that Triton or PyTorch look up on arguments (`dtype` is read from every autotuned argument).
import typing

import torch
import torch.nn as nn
import triton
import triton.language as tl


class Buffers(typing.NamedTuple):
    src: torch.Tensor
    dst: torch.Tensor

    @property
    def dtype(self):
        return self.src.dtype


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
