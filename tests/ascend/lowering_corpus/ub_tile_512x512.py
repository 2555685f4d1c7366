"""A 512 x 512 fp32 tile (1 MB) per program."""

import triton
import triton.language as tl

EXPECT = {"outcome": "lowered_ub_overflow", "ub_need_min": 1048576}
LAUNCHES = [
    {
        "kernel": "scale_tile",
        "grid": [4],
        "constexprs": {"BLOCK": 512},
        "tensor_args": [[[2048, 512], "float32"], [[2048, 512], "float32"]],
    }
]


@triton.jit
def scale_tile(x_ptr, out_ptr, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    cols = tl.arange(0, BLOCK)
    offs = rows[:, None] * BLOCK + cols[None, :]
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) * 0.5)
