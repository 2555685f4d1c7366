"""A pointer advanced only on some iterations (if on the loop index) of a static-trip loop."""

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
        "kernel": "skip_head",
        "grid": [8],
        "constexprs": {"BLOCK": 1024},
        "tensor_args": [[[8192], "float32"], [[8192], "float32"]],
    }
]


@triton.jit
def skip_head(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    p = x_ptr
    for i in range(0, 8):
        if i > 3:
            p = p + BLOCK
        acc += tl.load(p + offs)
    tl.store(out_ptr + offs, acc)
