# ruff: noqa
# expected: none
# Legitimate: a collections.namedtuple for the grid (collections is on the allow-list; namedtuple
# runs eval internally).
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


import collections

Grid = collections.namedtuple("Grid", ["programs", "block"])


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        g = Grid(triton.cdiv(n, 1024), 1024)
        relu_kernel[(g.programs,)](x, out, n, BLOCK=g.block)
        return out
