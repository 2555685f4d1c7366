"""continue in a kernel loop."""

import triton
import triton.language as tl

EXPECT = {
    "outcome": "lowering_failed",
    "stage": "frontend",
    "first_line": "unsupported AST node type: Continue",
    "kb_id": "no-return-break-while",
}
LAUNCHES = [
    {
        "kernel": "odd_blocks",
        "grid": [8],
        "constexprs": {"BLOCK": 1024},
        "tensor_args": [[[8192], "float32"], [[8192], "float32"]],
    }
]


@triton.jit
def odd_blocks(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(0, n):
        if i % 2 == 0:
            continue
        acc += tl.load(x_ptr + i * BLOCK + offs)
    tl.store(out_ptr + offs, acc)
