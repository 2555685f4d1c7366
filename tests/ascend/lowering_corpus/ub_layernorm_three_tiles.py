"""A layernorm holding x, weight and bias rows of 16384 fp32 (64 KB each).

Each tile fits alone, the three together (double-buffered) do not.
"""

import triton
import triton.language as tl

EXPECT = {"outcome": "lowered_ub_overflow", "ub_need_min": 393216}
LAUNCHES = [
    {
        "kernel": "layernorm_row",
        "grid": [4],
        "constexprs": {"BLOCK": 16384},
        "tensor_args": [[[4, 16384], "float32"], [[16384], "float32"], [[16384], "float32"], [[4, 16384], "float32"]],
    }
]


@triton.jit
def layernorm_row(x_ptr, w_ptr, b_ptr, out_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    diff = tl.where(mask, x - mean, 0.0)
    var = tl.sum(diff * diff, axis=0) / n_cols
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row * n_cols + cols, diff / tl.sqrt(var + eps) * w + b, mask=mask)
