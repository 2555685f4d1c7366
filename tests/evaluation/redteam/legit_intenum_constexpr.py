# ruff: noqa
# expected: none
# Legitimate (issue 22 point 5): an `enum.IntEnum` member passed straight as a tl.constexpr (IntEnum
# members are ints; Triton specialises on their value).
import enum

import torch
import torch.nn as nn
import triton
import triton.language as tl


class Act(enum.IntEnum):
    IDENTITY = 0
    RELU = 1


@triton.jit
def act_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, ACT: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    if ACT == 1:
        x = tl.maximum(x, 0.0)
    tl.store(out_ptr + offs, x, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = Act.RELU

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        act_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024, ACT=self.act)
        return out
