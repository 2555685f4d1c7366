"""tl.dot_scaled with fp8 operands (no fp8 / fp4 on Ascend)."""

import triton
import triton.language as tl

EXPECT = {
    "outcome": "lowering_failed",
    "stage": "frontend",
    "first_line": "NYI: lhs_format e4m3",
    "kb_id": "dot-scaled-limits",
}
LAUNCHES = [
    {
        "kernel": "scaled_square",
        "grid": [1],
        "constexprs": {"BLOCK": 64},
        "tensor_args": [[[64, 64], "float16"], [[64, 64], "float16"], [[64, 64], "float16"]],
    }
]


@triton.jit
def scaled_square(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + r[:, None] * BLOCK + r[None, :])
    b = tl.load(b_ptr + r[:, None] * BLOCK + r[None, :])
    c = tl.dot_scaled(a, None, "e4m3", b, None, "e4m3")
    tl.store(c_ptr + r[:, None] * BLOCK + r[None, :], c)
