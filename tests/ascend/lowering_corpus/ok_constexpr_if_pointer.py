"""A pointer chosen by an if on a constexpr flag: decided at compile time, lowers."""

import triton
import triton.language as tl

EXPECT = {"outcome": "lowered", "core_type": "aiv"}
LAUNCHES = [
    {
        "kernel": "pick_static",
        "grid": [8],
        "constexprs": {"BLOCK": 1024, "USE_B": True},
        "tensor_args": [[[8192], "float32"], [[8192], "float32"], [[8192], "float32"]],
    }
]


@triton.jit
def pick_static(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr, USE_B: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    if USE_B:
        src = b_ptr
    else:
        src = a_ptr
    tl.store(out_ptr + offs, tl.load(src + offs, mask=mask), mask=mask)
