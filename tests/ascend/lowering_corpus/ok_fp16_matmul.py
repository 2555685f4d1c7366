"""An fp16 tl.dot matmul with 64 x 64 tiles: cube and vector cores (mix)."""

import triton
import triton.language as tl

EXPECT = {"outcome": "lowered", "core_type": "mix"}
LAUNCHES = [
    {
        "kernel": "matmul",
        "grid": [4, 4],
        "constexprs": {"BM": 64, "BN": 64, "BK": 64},
        "tensor_args": [[[256, 256], "float16"], [[256, 256], "float16"], [[256, 256], "float16"]],
    }
]


@triton.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(
            a_ptr + rm[:, None] * K + (k + rk)[None, :], mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0
        )
        b = tl.load(
            b_ptr + (k + rk)[:, None] * N + rn[None, :], mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0
        )
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N))
