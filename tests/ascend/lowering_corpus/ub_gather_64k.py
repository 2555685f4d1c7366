"""A gather whose 65536 int32 indices (256 KB) are loaded in one tile."""

import triton
import triton.language as tl

EXPECT = {"outcome": "lowered_ub_overflow", "ub_need_min": 262144}
LAUNCHES = [
    {
        "kernel": "gather_rows",
        "grid": [1],
        "constexprs": {"BLOCK": 65536},
        "tensor_args": [[[65536], "float32"], [[65536], "int32"], [[65536], "float32"]],
    }
]


@triton.jit
def gather_rows(x_ptr, idx_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    idx = tl.load(idx_ptr + offs, mask=mask, other=0)
    tl.store(out_ptr + offs, tl.load(x_ptr + idx, mask=mask), mask=mask)
