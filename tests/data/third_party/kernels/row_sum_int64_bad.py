# task: level1/21_Row_sum_int64.py
# expected: value_mismatch
# WRONG: the loop skips column 0 of every row (off-by-one), so each sum misses x[r, 0] (0..99).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rowsum_kernel(x_ptr, out_ptr, C, START: tl.constexpr, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.int64)
    for s in range(0, C, BLOCK):
        c = s + tl.arange(0, BLOCK)
        m = (c < C) & (c >= START)
        acc += tl.load(x_ptr + r * C + c, mask=m, other=0)
    tl.store(out_ptr + r, tl.sum(acc, axis=0))


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        R, C = x.shape
        out = torch.empty((R,), dtype=torch.int64, device=x.device)
        rowsum_kernel[(R,)](x, out, C, START=1, BLOCK=4096)
        return out
