"""A matmul with 512 x 256 fp16 operand tiles: 512 KB of tl.dot operands per step, double-buffered past L1."""

import triton
import triton.language as tl

EXPECT = {"outcome": "lowered_l1_overflow"}
LAUNCHES = [
    {
        "kernel": "big_tile_matmul",
        "grid": [2, 2],
        "constexprs": {"BM": 512, "BN": 512, "BK": 256},
        "tensor_args": [[[1024, 1024], "float16"], [[1024, 1024], "float16"], [[1024, 1024], "float16"]],
    }
]


@triton.jit
def big_tile_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16))
