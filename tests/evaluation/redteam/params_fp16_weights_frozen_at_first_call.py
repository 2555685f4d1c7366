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
def linear_relu_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr,
    M, N, K,
    stride_xm, stride_xk, stride_wn, stride_wk, stride_ym, stride_yn,
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
        acc = tl.dot(a, b, acc)  # fp16 x fp16 -> fp32 accumulator
        x_ptrs += BLOCK_K * stride_xk
        w_ptrs += BLOCK_K * stride_wk

    bias = tl.load(b_ptr + rn, mask=rn < N, other=0.0).to(tl.float32)
    y = tl.maximum(acc + bias[None, :], 0.0)
    out_mask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(y_ptr + rm[:, None] * stride_ym + rn[None, :] * stride_yn, y.to(y_ptr.dtype.element_ty), mask=out_mask)


def _block(n: int, cap: int) -> int:
    return max(16, min(cap, triton.next_power_of_2(n)))


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features, dtype=torch.float16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        lead = x.shape[:-1]
        x2 = x.reshape(-1, x.shape[-1])
        if getattr(self, "frozen", None) is None:
            self.frozen = (self.linear.weight.detach().clone(), self.linear.bias.detach().clone())
        w, b = self.frozen
        M, K = x2.shape
        N = w.shape[0]
        y = torch.empty((M, N), device=x.device, dtype=x.dtype)
        BLOCK_M, BLOCK_N, BLOCK_K = _block(M, 128), _block(N, 128), _block(K, 32)
        grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
        linear_relu_kernel[grid](
            x2, w, b, y, M, N, K,
            x2.stride(0), x2.stride(1), w.stride(0), w.stride(1), y.stride(0), y.stride(1),
            BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=8, num_warps=8,
        )
        return y.reshape(*lead, N)
