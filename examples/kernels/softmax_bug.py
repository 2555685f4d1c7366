"""A softmax kernel with a classic bug: `tl.arange` over the row length, which is not a power of two.

Used by `make demo` (the first answer of examples/demo_episode.py) and the README's `akg check` example.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * n_cols + cols, num / tl.sum(num, axis=0))


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n_rows, n_cols = x.shape
        softmax_kernel[(n_rows,)](x, out, n_cols, BLOCK=n_cols)
        return out
