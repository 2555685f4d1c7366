import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bias_gelu_residual_kernel(
    x_ptr, b_ptr, r_ptr, y_ptr, M, N, stride_xm, stride_rm, stride_ym,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(x_ptr + rm[:, None] * stride_xm + rn[None, :], mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + rn, mask=rn < N, other=0.0).to(tl.float32)
    r = tl.load(r_ptr + rm[:, None] * stride_rm + rn[None, :], mask=mask, other=0.0).to(tl.float32)
    h = x + b[None, :]
    y = 0.5 * h * (1.0 + tl.math.erf(h * 0.7071067811865476)) + r
    tl.store(y_ptr + rm[:, None] * stride_ym + rn[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden_size: int):
        super().__init__()
        self.bias = nn.Parameter(0.5 * torch.randn(hidden_size, dtype=torch.float16))

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        x2 = x.reshape(-1, shape[-1]).contiguous()
        r2 = residual.reshape(-1, shape[-1]).contiguous()
        M, N = x2.shape
        y = torch.empty_like(x2)
        BLOCK_N = min(triton.next_power_of_2(N), 1024)
        BLOCK_M = max(1, min(64, 4096 // BLOCK_N))
        grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
        bias_gelu_residual_kernel[grid](
            x2, self.bias, r2, y, M, N, x2.stride(0), r2.stride(0), y.stride(0),
            BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
        )
        return y.reshape(shape)
