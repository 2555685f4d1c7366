"""A pointer advanced on every iteration of a while loop: lowers."""

import triton
import triton.language as tl

EXPECT = {"outcome": "lowered", "core_type": "aiv"}
LAUNCHES = [
    {
        "kernel": "walk_all",
        "grid": [8],
        "constexprs": {"BLOCK": 1024},
        "tensor_args": [[[8192], "float32"], [[8192], "float32"]],
    }
]


@triton.jit
def walk_all(x_ptr, out_ptr, steps, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    p = x_ptr
    i = 0
    while i < steps:
        acc += tl.load(p + offs)
        p += BLOCK
        i += 1
    tl.store(out_ptr + offs, acc)
