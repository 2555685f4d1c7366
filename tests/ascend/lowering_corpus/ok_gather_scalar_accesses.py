"""A gather at loaded indices: lowers, as a loop of 1024 scalar accesses (DiscreteMemAccess)."""

import triton
import triton.language as tl

EXPECT = {"outcome": "lowered", "core_type": "aiv", "scalar_accesses": 1024}
LAUNCHES = [
    {
        "kernel": "gather_small",
        "grid": [8],
        "constexprs": {"BLOCK": 1024},
        "tensor_args": [[[8192], "float32"], [[8192], "int32"], [[8192], "float32"]],
    }
]


@triton.jit
def gather_small(x_ptr, idx_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    idx = tl.load(idx_ptr + offs, mask=mask, other=0)
    tl.store(out_ptr + offs, tl.load(x_ptr + idx, mask=mask), mask=mask)
