"""tl.extra.cuda.libdevice (CUDA's libdevice; triton-ascend has none under that name)."""

import triton
import triton.language as tl

EXPECT = {
    "outcome": "lowering_failed",
    "stage": "frontend",
    "first_line": "has no attribute 'cuda'",
    "kb_id": "lowering-newer-triton-api",
}
LAUNCHES = [
    {
        "kernel": "libdevice_tanh",
        "grid": [8],
        "constexprs": {"BLOCK": 1024},
        "tensor_args": [[[8192], "float32"], [[8192], "float32"]],
    }
]


@triton.jit
def libdevice_tanh(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.extra.cuda.libdevice.tanh(tl.load(x_ptr + offs, mask=mask)), mask=mask)
