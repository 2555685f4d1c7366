"""tl.arange with a run-time bound."""

import triton
import triton.language as tl

EXPECT = {
    "outcome": "lowering_failed",
    "stage": "frontend",
    "first_line": "arange's arguments must be of type tl.constexpr",
    "kb_id": "arange-rules-ascend",
}
LAUNCHES = [
    {
        "kernel": "copy_n",
        "grid": [8],
        "constexprs": {"BLOCK": 1024},
        "tensor_args": [[[8192], "float32"], [[8192], "float32"]],
    }
]


@triton.jit
def copy_n(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, n)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs))
