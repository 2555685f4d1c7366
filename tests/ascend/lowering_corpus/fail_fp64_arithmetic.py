"""fp64 tensors (no fp64 on Ascend)."""

import triton
import triton.language as tl

EXPECT = {
    "outcome": "lowering_failed",
    "stage": "frontend",
    "first_line": "fp64] is unsupported on Ascend",
    "kb_id": "unsupported-unsigned-and-fp64",
}
LAUNCHES = [
    {
        "kernel": "double_it",
        "grid": [8],
        "constexprs": {"BLOCK": 1024},
        "tensor_args": [[[8192], "float64"], [[8192], "float64"]],
    }
]


@triton.jit
def double_it(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)
