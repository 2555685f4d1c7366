import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gemm_scale_residual_kernel(
    x_ptr, w_ptr, b_ptr, r_ptr, y_ptr,
    M, N, K, scale,
    stride_xm, stride_xk, stride_wn, stride_wk, stride_rm, stride_ym,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    group_size = GROUP_M * num_pid_n
    first_m = (pid // group_size) * GROUP_M
    rows_in_group = tl.minimum(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group_size) % rows_in_group
    pid_n = (pid % group_size) // rows_in_group

    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    x_ptrs = x_ptr + rm[:, None] * stride_xm + rk[None, :] * stride_xk
    w_ptrs = w_ptr + rn[None, :] * stride_wn + rk[:, None] * stride_wk
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_mask = (k0 + rk) < K
        a = tl.load(x_ptrs, mask=(rm[:, None] < M) & k_mask[None, :], other=0.0)
        b = tl.load(w_ptrs, mask=k_mask[:, None] & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")
        x_ptrs += BLOCK_K * stride_xk
        w_ptrs += BLOCK_K * stride_wk

    out_mask = (rm[:, None] < M) & (rn[None, :] < N)
    bias = tl.load(b_ptr + rn, mask=rn < N, other=0.0)
    res = tl.load(r_ptr + rm[:, None] * stride_rm + rn[None, :], mask=out_mask, other=0.0)
    y = (acc + bias[None, :]) * scale + res
    tl.store(y_ptr + rm[:, None] * stride_ym + rn[None, :], y, mask=out_mask)


def _block(n: int, cap: int) -> int:
    return max(16, min(cap, triton.next_power_of_2(n)))


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int, scale: float):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        lead = x.shape[:-1]
        x2 = x.reshape(-1, x.shape[-1])
        w, b = self.linear.weight, self.linear.bias
        M, K = x2.shape
        N = w.shape[0]
        r2 = residual.reshape(M, N).contiguous()
        y = torch.empty((M, N), device=x.device, dtype=x.dtype)
        BLOCK_M, BLOCK_N, BLOCK_K = _block(M, 64), _block(N, 64), _block(K, 32)
        grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
        gemm_scale_residual_kernel[grid](
            x2, w, b, r2, y, M, N, K, self.scale,
            x2.stride(0), x2.stride(1), w.stride(0), w.stride(1), r2.stride(0), y.stride(0),
            BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=8,
        )
        return y.reshape(*lead, N)
