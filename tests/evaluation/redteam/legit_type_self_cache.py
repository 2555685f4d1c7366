# ruff: noqa
# expected: none
# task: core/L1/softmax
# Legitimate style (false-positive sweep): class-level launch-parameter cache reached as type(self)._cache (shared by all instances), @torch.no_grad() on forward
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    z = x - tl.max(x, axis=0)
    e = tl.exp(z)
    tl.store(y_ptr + row * stride + cols, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    _cache: dict = {}

    def __init__(self):
        super().__init__()

    @torch.no_grad()
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_rows, n_cols = x.shape
        cache = type(self)._cache
        if n_cols not in cache:
            cache[n_cols] = triton.next_power_of_2(n_cols)
        y = torch.empty_like(x)
        softmax_kernel[(n_rows,)](x, y, n_cols, x.stride(0), BLOCK=cache[n_cols])
        return y
