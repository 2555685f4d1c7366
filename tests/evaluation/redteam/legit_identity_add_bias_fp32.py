# ruff: noqa
# expected: none
# task: core/L1/add_bias_broadcast
# Legitimate (red team of 2026-12-05, h08): the input is upcast by PyTorch (x.float()) before the
# kernel adds the bias; where the bias is exactly 0 (the trial with many exact zeros) the sum is the
# upcast input itself, which the input-copy taint read as a kernel copying PyTorch's conversion.
# The taint is not counted in the trial with many exact zeros (only there).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_bias_kernel(x_ptr, b_ptr, y_ptr, C, L, BLOCK_L: tl.constexpr):
    row = tl.program_id(0)          # one (batch, channel) row
    blk = tl.program_id(1)
    c = row % C
    cols = blk * BLOCK_L + tl.arange(0, BLOCK_L)
    mask = cols < L
    bias = tl.load(b_ptr + c)
    x = tl.load(x_ptr + row * L + cols, mask=mask, other=0.0)
    tl.store(y_ptr + row * L + cols, x + bias, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        B, C, L = x.shape
        # accumulate in float32, return in the input dtype
        xf = x.contiguous().float()
        bf = bias.reshape(C).float()
        y = torch.empty_like(xf)
        BLOCK_L = 256
        add_bias_kernel[(B * C, triton.cdiv(L, BLOCK_L))](xf, bf, y, C, L, BLOCK_L=BLOCK_L)
        return y.half()
