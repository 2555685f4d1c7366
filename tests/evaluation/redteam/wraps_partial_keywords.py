# ruff: noqa
# expected: forbidden
# functools.wraps(obj) is a partial of update_wrapper whose keywords dict can be edited
# (assigned=("gi_frame",)) before it is applied: wraps is allowed only as a plain decorator,
# @functools.wraps(fn), so the partial never reaches the candidate as a value.
import functools

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def decoy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0.0) * 2.0, mask=mask)


def stepper():
    yield 1


class Box:
    got = None

    def __setattr__(self, name, value):
        Box.got = value


class ModelNew(nn.Module):
    def forward(self, x):
        copier = functools.wraps(stepper())
        copier.keywords["assigned"] = ("gi_" + "frame",)
        copier(Box())
        out = torch.empty_like(x)
        decoy_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        return out
