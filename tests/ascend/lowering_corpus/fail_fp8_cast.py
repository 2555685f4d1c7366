"""A cast to fp8 (float8e4nv)."""

import triton
import triton.language as tl

EXPECT = {
    "outcome": "lowering_failed",
    "stage": "frontend",
    "first_line": "unexpected type fp8",
    "kb_id": "unsupported-unsigned-and-fp64",
}
LAUNCHES = [
    {
        "kernel": "fp8_roundtrip",
        "grid": [8],
        "constexprs": {"BLOCK": 1024},
        "tensor_args": [[[8192], "float32"], [[8192], "float32"]],
    }
]


@triton.jit
def fp8_roundtrip(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float8e4nv)
    tl.store(out_ptr + offs, x.to(tl.float32), mask=mask)
