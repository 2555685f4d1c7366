# ruff: noqa
# expected: none
# task: core/L1/relu
# Honest (false-positive hunt of 2026-12-05, night): out = x.clone(), then a kernel zeroes the
# negative elements of out in place. The positive half of the output still holds the clone's
# bytes, which is what relu computes; refused as torch_fallback before.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_in_place(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(out_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.where(v > 0, v, 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        out = x.contiguous().clone()
        relu_in_place[(triton.cdiv(out.numel(), 1024),)](out, out.numel(), BLOCK=1024)
        return out
