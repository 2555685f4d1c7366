"""tl.range(..., warp_specialize=True): a newer keyword that triton-ascend's front end accepts and ignores."""

import triton
import triton.language as tl

EXPECT = {"outcome": "lowered", "core_type": "aiv"}
LAUNCHES = [
    {
        "kernel": "sum_blocks",
        "grid": [8],
        "constexprs": {"BLOCK": 1024},
        "tensor_args": [[[8192], "float32"], [[8192], "float32"]],
    }
]


@triton.jit
def sum_blocks(x_ptr, out_ptr, steps, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in tl.range(0, steps, warp_specialize=True):
        acc += tl.load(x_ptr + i * BLOCK + offs)
    tl.store(out_ptr + offs, acc)
