"""atomic_add on int64: our rules call it an error; the adapter lowers it (bishengir-compile, not run here, decides)."""

import triton
import triton.language as tl

EXPECT = {"outcome": "lowered", "core_type": "aiv"}
LAUNCHES = [
    {
        "kernel": "count_atomic",
        "grid": [8],
        "constexprs": {"BLOCK": 1024},
        "tensor_args": [[[8192], "int64"], [[8192], "int64"]],
    }
]


@triton.jit
def count_atomic(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.atomic_add(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)
