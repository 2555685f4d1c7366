# task: level1/28_Random_basis_nonpersistent_buffer.py
# expected: none
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def project_kernel(x_ptr, b_ptr, out_ptr, M, K, N, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    ks = tl.arange(0, BLOCK_K)
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + rows[:, None] * K + ks[None, :], mask=(rows[:, None] < M) & (ks[None, :] < K), other=0.0)
    basis = tl.load(b_ptr + ks[:, None] * N + cols[None, :], mask=(ks[:, None] < K) & (cols[None, :] < N), other=0.0)
    acc = tl.dot(x, basis, input_precision="ieee")
    tl.store(out_ptr + rows[:, None] * N + cols[None, :], acc, mask=(rows[:, None] < M) & (cols[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        # filled by the harness with the reference's values, like the parameters
        self.register_buffer("basis", torch.empty(in_features, out_features), persistent=False)

    def forward(self, x):
        x = x.contiguous()
        M, K = x.shape
        N = self.basis.shape[1]
        out = torch.empty((M, N), device=x.device, dtype=x.dtype)
        block_k = max(16, triton.next_power_of_2(K))
        block_n = max(16, triton.next_power_of_2(N))
        grid = (triton.cdiv(M, 16),)
        project_kernel[grid](x, self.basis.contiguous(), out, M, K, N, BLOCK_M=16, BLOCK_K=block_k, BLOCK_N=block_n)
        return out
