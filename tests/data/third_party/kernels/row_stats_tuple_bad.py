# task: level1/5_Row_stats_tuple_output.py
# expected: wrong_output_type
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
    xm = tl.where(mask, x, float("-inf"))
    tl.store(max_ptr + row, tl.max(xm, axis=0))


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        R, C = x.shape
        sums = torch.empty(R, device=x.device, dtype=x.dtype)
        maxs = torch.empty(R, device=x.device, dtype=x.dtype)
        row_stats_kernel[(R,)](x, sums, maxs, C, BLOCK=triton.next_power_of_2(C))
        return sums
