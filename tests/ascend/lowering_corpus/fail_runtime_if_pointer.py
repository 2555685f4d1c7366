"""A pointer assigned in the branches of a run-time if / else (no loop)."""

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
        "kernel": "branch_pointer",
        "grid": [8],
        "constexprs": {"BLOCK": 1024},
        "tensor_args": [[[8192], "float32"], [[8192], "float32"], [[8192], "float32"]],
    }
]


@triton.jit
def branch_pointer(a_ptr, b_ptr, out_ptr, n, use_b, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    if use_b > 0:
        src = b_ptr
    else:
        src = a_ptr
    tl.store(out_ptr + offs, tl.load(src + offs, mask=mask), mask=mask)
