"""An element-wise add with a 1<<20 block: 4 MB per loaded tile, far past the 192 KB UB."""

import triton
import triton.language as tl

EXPECT = {"outcome": "lowered_ub_overflow", "ub_need_min": 8388608}
LAUNCHES = [
    {
        "kernel": "add_huge",
        "grid": [8],
        "constexprs": {"BLOCK": 1048576},
        "tensor_args": [[[4194304], "float32"], [[4194304], "float32"], [[4194304], "float32"]],
    }
]


@triton.jit
def add_huge(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)
