"""tl.div_rn on scalars: triton-adapter-opt fails an assertion (null types in a TypeRange)."""

import triton
import triton.language as tl

EXPECT = {
    "outcome": "lowering_failed",
    "stage": "ttadapter",
    "first_line": "assertion",
    "kb_id": "scalar-div-rn-lowering-crash",
}
LAUNCHES = [
    {
        "kernel": "scaled_copy",
        "grid": [8],
        "constexprs": {"BLOCK": 1024},
        "tensor_args": [[[8192], "float32"], [[8192], "float32"]],
    }
]


@triton.jit
def scaled_copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    s = tl.div_rn(n.to(tl.float32), 3.0)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * s, mask=mask)
