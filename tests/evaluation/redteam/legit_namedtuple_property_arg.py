# ruff: noqa
# expected: none
# Legitimate (issue 22 point 5): a typing.NamedTuple with a @property (used on the host for the
# grid) passed whole as a kernel argument; its fields are plain ints.
import typing

import torch
import torch.nn as nn
import triton
import triton.language as tl


class Tiling(typing.NamedTuple):
    n: int
    block: int

    @property
    def programs(self) -> int:
        return (self.n + self.block - 1) // self.block


@triton.jit
def relu_kernel(x_ptr, out_ptr, tiling, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < tiling.n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        tiling = Tiling(x.numel(), 1024)
        relu_kernel[(tiling.programs,)](x, out, tiling, BLOCK=tiling.block)
        return out
