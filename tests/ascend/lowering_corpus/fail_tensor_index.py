"""Python indexing of a tensor (v[0])."""

import triton
import triton.language as tl

EXPECT = {
    "outcome": "lowering_failed",
    "stage": "frontend",
    "first_line": "unsupported tensor index",
    "kb_id": "no-python-tensor-slicing",
}
LAUNCHES = [
    {
        "kernel": "first_element",
        "grid": [8],
        "constexprs": {"BLOCK": 1024},
        "tensor_args": [[[8192], "float32"], [[8192], "float32"]],
    }
]


@triton.jit
def first_element(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr, v[0])
