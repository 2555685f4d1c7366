# ruff: noqa
# expected: none
# task: core/L1/mul_row_broadcast
# Legitimate style (false-positive sweep): module `__all__ = [...]` export list, typing.Tuple return annotation helper, 2-D tiles
from typing import Tuple

import torch
import torch.nn as nn
import triton
import triton.language as tl

__all__ = ["ModelNew", "mul_row_kernel"]


@triton.jit
def mul_row_kernel(x_ptr, s_ptr, y_ptr, M, N, stride_m, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    rows = pm * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pn * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * stride_m + cols[None, :], mask=mask, other=0.0)
    s = tl.load(s_ptr + cols, mask=cols < N, other=0.0)
    tl.store(y_ptr + rows[:, None] * stride_m + cols[None, :], x * s[None, :], mask=mask)


def _grid(M: int, N: int, bm: int, bn: int) -> Tuple[int, int]:
    return (triton.cdiv(M, bm), triton.cdiv(N, bn))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        M, N = x.shape
        y = torch.empty_like(x)
        mul_row_kernel[_grid(M, N, 16, 128)](x, scale, y, M, N, x.stride(0), BLOCK_M=16, BLOCK_N=128)
        return y
