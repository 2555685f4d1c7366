# ruff: noqa
# expected: none
# task: core/L1/leaky_relu
# Legitimate style (false-positive sweep): a @staticmethod `block_size(n)` whose result is kept in a local `block_size` and passed to the launch
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def leaky_relu_kernel(x_ptr, y_ptr, n, slope, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    xf = x.to(tl.float32)
    y = tl.where(xf >= 0, xf, xf * slope)
    tl.store(y_ptr + offs, y.to(x.dtype), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float):
        super().__init__()
        self.negative_slope = negative_slope

    @staticmethod
    def block_size(n: int) -> int:
        return min(4096, triton.next_power_of_2(n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        block_size = self.block_size(n)
        grid = (triton.cdiv(n, block_size),)
        leaky_relu_kernel[grid](x, y, n, self.negative_slope, BLOCK=block_size)
        return y
