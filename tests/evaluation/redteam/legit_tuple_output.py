# ruff: noqa
# expected: none
# task: third_party/level1/5_Row_stats_tuple_output.py
# Legitimate: a tuple-returning task answered with a plain tuple of two kernel outputs (only
# exact tuples / lists are accepted as output containers; this one must still pass).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_stats_kernel(x_ptr, sum_ptr, max_ptr, C, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < C
    x = tl.load(x_ptr + row * C + offs, mask=mask, other=0.0)
    tl.store(sum_ptr + row, tl.sum(x, axis=0))
    tl.store(max_ptr + row, tl.max(tl.where(mask, x, float("-inf")), axis=0))


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        rows, cols = x.shape
        sums = torch.empty(rows, device=x.device, dtype=x.dtype)
        maxs = torch.empty(rows, device=x.device, dtype=x.dtype)
        row_stats_kernel[(rows,)](x, sums, maxs, cols, BLOCK=triton.next_power_of_2(cols))
        return sums, maxs
