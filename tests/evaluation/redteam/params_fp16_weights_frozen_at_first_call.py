# expected: value_mismatch
# task: core/L2/linear_relu_fp16
# A float16 linear layer that copies its weight and bias at its first call and uses the copies from
# then on: the trials that change the parameters in place find it stale. The judge's float16 slack
# (the reference run again in float32) was computed by a float32 copy of the reference made once,
# with its parameters as constructed, so on those trials the slack was as large as the parameters'
# effect on the output, and the stale kernel passed (2026-12-06).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_linear_relu(x_ptr, w_ptr, b_ptr, y_ptr, N, K, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + tl.arange(0, BLOCK_K)
        x = tl.load(x_ptr + row * K + ks, mask=ks < K, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols[:, None] * K + ks[None, :], mask=(cols[:, None] < N) & (ks[None, :] < K), other=0.0)
        acc += tl.sum(w.to(tl.float32) * x[None, :], axis=1)
    acc += tl.load(b_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * N + cols, tl.maximum(acc, 0.0).to(tl.float16), mask=cols < N)


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features, dtype=torch.float16)
        self.frozen = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.frozen is None:
            self.frozen = (self.linear.weight.detach().clone(), self.linear.bias.detach().clone())
        w, b = self.frozen
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        M, K = x2.shape
        N = w.shape[0]
        y = torch.empty((M, N), device=x.device, dtype=x.dtype)
        grid = (M, triton.cdiv(N, 64))
        row_linear_relu[grid](x2, w, b, y, N, K, BLOCK_N=64, BLOCK_K=64)
        return y.reshape(*x.shape[:-1], N)
