"""Both candidates loaded with their own offsets, the values chosen with tl.where: lowers."""

import triton
import triton.language as tl

EXPECT = {"outcome": "lowered", "core_type": "aiv"}
LAUNCHES = [
    {
        "kernel": "pick_values",
        "grid": [8],
        "constexprs": {"BLOCK": 1024},
        "tensor_args": [[[8192], "float32"], [[8192], "float32"], [[8192], "float32"]],
    }
]


@triton.jit
def pick_values(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.where(pid % 2 == 0, a, b), mask=mask)
