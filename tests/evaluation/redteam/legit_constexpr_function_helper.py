# ruff: noqa
# expected: none
# expected_on_cuda: none|compile_error
# (Triton 3.6 refuses a plain helper referenced from a constexpr function, "Unsupported function referenced";
# the interpreter's Triton 3.9 accepts it: a compile error there is Triton's verdict, not the evaluator's)
# task: core/L1/softmax
# Legitimate style (false-positive sweep): @triton.constexpr_function that calls a plain-Python module helper (both run in Python at compile time); __version__ string
import torch
import torch.nn as nn
import triton
import triton.language as tl

__version__ = "0.1.0"


def _round_up_pow2(n):
    p = 1
    while p < n:
        p *= 2
    return p


@triton.constexpr_function
def tile_for(n_cols):
    return min(_round_up_pow2(n_cols), 1024)


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, stride, N_COLS: tl.constexpr):
    BLOCK: tl.constexpr = tile_for(N_COLS)
    row = tl.program_id(0)
    m = float("-inf")
    s = 0.0
    for c0 in range(0, n_cols, BLOCK):
        cols = c0 + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=float("-inf"))
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    for c0 in range(0, n_cols, BLOCK):
        cols = c0 + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * stride + cols, mask=mask, other=float("-inf"))
        tl.store(y_ptr + row * stride + cols, tl.exp(x - m) / s, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_rows, n_cols = x.shape
        y = torch.empty_like(x)
        softmax_kernel[(n_rows,)](x, y, n_cols, x.stride(0), N_COLS=n_cols)
        return y
