# ruff: noqa
# expected: none
# task: core/L1/matmul_square
# Legitimate style (false-positive sweep): host-side TensorDescriptor (triton.tools.tensor_descriptor, the documented block-pointer successor), desc.load/desc.store, 2-D grid
import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

BLOCK_M, BLOCK_N, BLOCK_K = 32, 32, 32


@triton.jit
def matmul_tma_kernel(a_desc, b_desc, c_desc, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    off_m = pid_m * BLOCK_M
    off_n = pid_n * BLOCK_N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = a_desc.load([off_m, k])
        b = b_desc.load([k, off_n])
        acc = tl.dot(a, b, acc)
    c_desc.store([off_m, off_n], acc.to(tl.float16))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        A = A.contiguous()
        B = B.contiguous()
        M, K = A.shape
        N = B.shape[1]
        C = torch.empty((M, N), device=A.device, dtype=A.dtype)
        a_desc = TensorDescriptor.from_tensor(A, [BLOCK_M, BLOCK_K])
        b_desc = TensorDescriptor.from_tensor(B, [BLOCK_K, BLOCK_N])
        c_desc = TensorDescriptor.from_tensor(C, [BLOCK_M, BLOCK_N])
        grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
        matmul_tma_kernel[grid](a_desc, b_desc, c_desc, K, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K)
        return C
