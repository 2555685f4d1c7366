"""Pointer updates inside an if in a while loop (a documented triton-ascend limit)."""

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
        "kernel": "walk_while",
        "grid": [8],
        "constexprs": {"BLOCK": 1024},
        "tensor_args": [[[8192], "float32"], [[8192], "float32"]],
    }
]


@triton.jit
def walk_while(x_ptr, out_ptr, steps, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    p = x_ptr
    i = 0
    while i < steps:
        acc += tl.load(p + offs)
        if i % 2 == 0:
            p += BLOCK
        i += 1
    tl.store(out_ptr + offs, acc)
