"""tl.dot with allow_tf32=True (deprecated; Ascend has hf32)."""

import triton
import triton.language as tl

EXPECT = {
    "outcome": "lowering_failed",
    "stage": "frontend",
    "first_line": "allow_tf32 is deprecated",
    "kb_id": "dot-input-precision",
}
LAUNCHES = [
    {
        "kernel": "square_allow",
        "grid": [1],
        "constexprs": {"BLOCK": 64},
        "tensor_args": [[[64, 64], "float32"], [[64, 64], "float32"]],
    }
]


@triton.jit
def square_allow(x_ptr, out_ptr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + r[:, None] * BLOCK + r[None, :])
    tl.store(out_ptr + r[:, None] * BLOCK + r[None, :], tl.dot(x, x, allow_tf32=True))
