# ruff: noqa
# expected: none
# Legitimate style (issue 21 false-positive probe): a config class derived from a namedtuple call
# (a base computed by a call, but a tuple class), an IntEnum and an exception subclass, a short
# string constexpr; only ints, a string and tensors reach the launch.
import collections
import enum

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def act_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, ACT: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    if ACT == "relu":
        x = tl.maximum(x, 0.0)
    tl.store(out_ptr + offs, x, mask=mask)


class Warps(enum.IntEnum):
    FEW = 2
    MANY = 4


class ShapeError(ValueError):
    pass


class Launch(collections.namedtuple("Launch", "block warps")):
    def grid(self, n):
        return (triton.cdiv(n, self.block),)


CONFIG = Launch(block=1024, warps=int(Warps.MANY))


class ModelNew(nn.Module):
    def forward(self, x):
        if type(x) is not torch.Tensor or not x.is_contiguous():
            raise ShapeError(f"expected a contiguous tensor, got {type(x).__name__}")
        out = torch.empty_like(x)
        n = x.numel()
        act_kernel[CONFIG.grid(n)](x, out, n, BLOCK=CONFIG.block, ACT="relu", num_warps=CONFIG.warps)
        return out
