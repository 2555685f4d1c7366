import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def residual_rmsnorm_kernel(
    x_ptr, r_ptr, w_ptr, y_ptr, M, N, eps,
    stride_xm, stride_rm, stride_ym,
    ROWS: tl.constexpr, BLOCK_N: tl.constexpr,
):
    # Each program normalises ROWS rows; columns are processed in chunks of BLOCK_N (two passes).
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    row_mask = rows < M
    cols = tl.arange(0, BLOCK_N)
    sq = tl.zeros((ROWS, BLOCK_N), dtype=tl.float32)
    for n0 in range(0, N, BLOCK_N):
        c = n0 + cols
        mask = row_mask[:, None] & (c[None, :] < N)
        # Upcast right after loading: all arithmetic in float32.
        x = tl.load(x_ptr + rows[:, None] * stride_xm + c[None, :], mask=mask, other=0.0).to(tl.float32)
        r = tl.load(r_ptr + rows[:, None] * stride_rm + c[None, :], mask=mask, other=0.0).to(tl.float32)
        h = x + r
        sq += h * h
    inv_rms = tl.rsqrt(tl.sum(sq, axis=1) / N + eps)
    for n0 in range(0, N, BLOCK_N):
        c = n0 + cols
        mask = row_mask[:, None] & (c[None, :] < N)
        # Upcast right after loading: all arithmetic in float32.
        x = tl.load(x_ptr + rows[:, None] * stride_xm + c[None, :], mask=mask, other=0.0).to(tl.float32)
        r = tl.load(r_ptr + rows[:, None] * stride_rm + c[None, :], mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + c, mask=c < N, other=0.0).to(tl.float32)
        h = x + r
        y = h * inv_rms[:, None] * w[None, :]
        tl.store(y_ptr + rows[:, None] * stride_ym + c[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden_size: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.2 * torch.randn(hidden_size, dtype=torch.bfloat16))
        self.eps = eps

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        x2 = x.reshape(-1, shape[-1]).contiguous()
        r2 = residual.reshape(-1, shape[-1]).contiguous()
        M, N = x2.shape
        y = torch.empty_like(x2)
        BLOCK_N = min(triton.next_power_of_2(N), 4096)
        ROWS = max(1, min(64, 4096 // BLOCK_N))
        grid = (triton.cdiv(M, ROWS),)
        residual_rmsnorm_kernel[grid](
            x2, r2, self.weight, y, M, N, self.eps,
            x2.stride(0), r2.stride(0), y.stride(0),
            ROWS=ROWS, BLOCK_N=BLOCK_N,
        )
        return y.reshape(shape)
