# task: level2/3_Linear_Scale_Bias.py
# expected: none
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_scale_bias_kernel(x_ptr, w_ptr, b_ptr, extra_ptr, out_ptr, N, K, scale,
                             BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    cmask = cols < N
    kmask = ks < K
    x = tl.load(x_ptr + row * K + ks, mask=kmask, other=0.0)
    w = tl.load(w_ptr + cols[:, None] * K + ks[None, :], mask=cmask[:, None] & kmask[None, :], other=0.0)
    acc = tl.sum(w * x[None, :], axis=1)
    b = tl.load(b_ptr + cols, mask=cmask, other=0.0)
    e = tl.load(extra_ptr + cols, mask=cmask, other=0.0)
    y = (acc + b) * scale + e
    tl.store(out_ptr + row * N + cols, y, mask=cmask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scaling_factor, bias_shape):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scaling_factor = scaling_factor
        self.bias = nn.Parameter(torch.randn(bias_shape) * 0.02)

    def forward(self, x):
        x = x.contiguous()
        M, K = x.shape
        N = self.linear.out_features
        out = torch.empty((M, N), device=x.device, dtype=x.dtype)
        linear_scale_bias_kernel[(M,)](
            x, self.linear.weight, self.linear.bias, self.bias, out, N, K, self.scaling_factor,
            BLOCK_N=triton.next_power_of_2(N), BLOCK_K=triton.next_power_of_2(K),
        )
        return out
