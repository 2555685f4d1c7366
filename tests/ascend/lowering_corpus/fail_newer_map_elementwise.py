"""tl.map_elementwise (Triton 3.5; triton-ascend is Triton 3.2)."""

import triton
import triton.language as tl

EXPECT = {
    "outcome": "lowering_failed",
    "stage": "frontend",
    "first_line": "has no attribute 'map_elementwise'",
    "kb_id": "lowering-newer-triton-api",
}
LAUNCHES = [
    {
        "kernel": "map_double",
        "grid": [8],
        "constexprs": {"BLOCK": 1024},
        "tensor_args": [[[8192], "float32"], [[8192], "float32"]],
    }
]


@triton.jit
def _twice(v):
    return v * 2


@triton.jit
def map_double(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.map_elementwise(_twice, tl.load(x_ptr + offs, mask=mask)), mask=mask)
