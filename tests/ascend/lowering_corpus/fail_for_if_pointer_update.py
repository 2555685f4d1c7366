"""Pointer updates inside an if in a for loop."""

import triton
import triton.language as tl

EXPECT = {
    "outcome": "lowering_failed",
    "stage": "ttadapter",
    "first_line": "pointer assigned in an if / else branch inside a loop",
    "kb_id": "lowering-pointer-select-or-branch",
}
LAUNCHES = [
    {
        "kernel": "walk_for",
        "grid": [8],
        "constexprs": {"BLOCK": 1024},
        "tensor_args": [[[8192], "float32"], [[8192], "float32"]],
    }
]


@triton.jit
def walk_for(x_ptr, out_ptr, steps, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    p = x_ptr
    for i in range(0, steps):
        acc += tl.load(p + offs)
        if i % 2 == 0:
            p += BLOCK
    tl.store(out_ptr + offs, acc)
