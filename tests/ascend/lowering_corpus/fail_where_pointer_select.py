"""A pointer chosen at run time with tl.where between two base pointers."""

import triton
import triton.language as tl

EXPECT = {
    "outcome": "lowering_failed",
    "stage": "ttadapter",
    "first_line": "pointer chosen at run time",
    "kb_id": "lowering-pointer-select-or-branch",
    "line": 28,
}
LAUNCHES = [
    {
        "kernel": "pick",
        "grid": [8],
        "constexprs": {"BLOCK": 1024},
        "tensor_args": [[[8192], "float32"], [[8192], "float32"], [[8192], "float32"]],
    }
]


@triton.jit
def pick(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    src = tl.where(pid % 2 == 0, a_ptr, b_ptr)
    tl.store(out_ptr + offs, tl.load(src + offs, mask=mask), mask=mask)
