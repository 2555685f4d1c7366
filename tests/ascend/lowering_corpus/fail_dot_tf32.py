"""tl.dot with input_precision='tf32' (Ascend has hf32)."""

import triton
import triton.language as tl

EXPECT = {
    "outcome": "lowering_failed",
    "stage": "frontend",
    "first_line": "input_precision == tf32",
    "kb_id": "dot-input-precision",
}
LAUNCHES = [
    {
        "kernel": "square_tf32",
        "grid": [1],
        "constexprs": {"BLOCK": 64},
        "tensor_args": [[[64, 64], "float32"], [[64, 64], "float32"]],
    }
]


@triton.jit
def square_tf32(x_ptr, out_ptr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + r[:, None] * BLOCK + r[None, :])
    tl.store(out_ptr + r[:, None] * BLOCK + r[None, :], tl.dot(x, x, input_precision="tf32"))
