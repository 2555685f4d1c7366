"""tl.where on a scalar condition between two pointers (a select of pointers all the same)."""

import triton
import triton.language as tl

EXPECT = {
    "outcome": "lowering_failed",
    "stage": "ttadapter",
    "first_line": "pointer chosen at run time",
    "kb_id": "lowering-pointer-select-or-branch",
}
LAUNCHES = [
    {
        "kernel": "pick_flag",
        "grid": [8],
        "constexprs": {"BLOCK": 1024},
        "tensor_args": [[[8192], "float32"], [[8192], "float32"], [[8192], "float32"]],
    }
]


@triton.jit
def pick_flag(a_ptr, b_ptr, out_ptr, n, use_b, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    src = tl.where(use_b > 0, b_ptr, a_ptr)
    tl.store(out_ptr + offs, tl.load(src + offs, mask=mask), mask=mask)
