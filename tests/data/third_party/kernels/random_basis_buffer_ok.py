# task: level1/28_Random_basis_nonpersistent_buffer.py
# expected: none
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def project_kernel(x_ptr, b_ptr, out_ptr, M, K: tl.constexpr, N: tl.constexpr, BLOCK_M: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    ks = tl.arange(0, K)
    cols = tl.arange(0, N)
    x = tl.load(x_ptr + rows[:, None] * K + ks[None, :], mask=rows[:, None] < M, other=0.0)
    basis = tl.load(b_ptr + ks[:, None] * N + cols[None, :])
    acc = tl.dot(x, basis, input_precision="ieee")
    tl.store(out_ptr + rows[:, None] * N + cols[None, :], acc, mask=rows[:, None] < M)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        basis = torch.randn(in_features, out_features) / in_features**0.5
        self.register_buffer("basis", basis, persistent=False)

    def forward(self, x):
        x = x.contiguous()
        M, K = x.shape
        N = self.basis.shape[1]
        out = torch.empty((M, N), device=x.device, dtype=x.dtype)
        project_kernel[(triton.cdiv(M, 16),)](x, self.basis.contiguous(), out, M, K=K, N=N, BLOCK_M=16)
        return out
