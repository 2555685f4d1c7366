"""A row softmax that loads a whole 65536-element fp32 row (256 KB) at once."""

import triton
import triton.language as tl

EXPECT = {"outcome": "lowered_ub_overflow", "ub_need_min": 262144}
LAUNCHES = [
    {
        "kernel": "row_softmax",
        "grid": [8],
        "constexprs": {"BLOCK": 65536},
        "tensor_args": [[[8, 65536], "float32"], [[8, 65536], "float32"]],
    }
]


@triton.jit
def row_softmax(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=float("-inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * n_cols + cols, e / tl.sum(e, axis=0), mask=mask)
