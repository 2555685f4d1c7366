"""A device-side tensor descriptor (tl.make_tensor_descriptor, Triton 3.4's form)."""

import triton
import triton.language as tl

EXPECT = {
    "outcome": "lowering_failed",
    "stage": "frontend",
    "first_line": "cannot cast",
    "kb_id": "lowering-frontend-rejects",
}
LAUNCHES = [
    {
        "kernel": "descriptor_copy",
        "grid": [8],
        "constexprs": {"BLOCK": 256},
        "tensor_args": [[[8192], "float32"], [[8192], "float32"]],
    }
]


@triton.jit
def descriptor_copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    desc = tl.make_tensor_descriptor(x_ptr, shape=[n], strides=[1], block_shape=[BLOCK])
    v = desc.load([tl.program_id(0) * BLOCK])
    tl.store(out_ptr + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK), v)
