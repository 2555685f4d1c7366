import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_layernorm_kernel(
    x_ptr, r_ptr, w_ptr, b_ptr, y_ptr, M, N, eps,
    stride_xm, stride_rm, stride_ym,
    ROWS: tl.constexpr, BLOCK_N: tl.constexpr,
):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    row_mask = rows < M
    cols = tl.arange(0, BLOCK_N)
    acc = tl.zeros((ROWS, BLOCK_N), dtype=tl.float32)
    for n0 in range(0, N, BLOCK_N):
        c = n0 + cols
        mask = row_mask[:, None] & (c[None, :] < N)
        x = tl.load(x_ptr + rows[:, None] * stride_xm + c[None, :], mask=mask, other=0.0)
        r = tl.load(r_ptr + rows[:, None] * stride_rm + c[None, :], mask=mask, other=0.0)
        acc += x + r
    mean = tl.sum(acc, axis=1) / N
    acc = tl.zeros((ROWS, BLOCK_N), dtype=tl.float32)
    for n0 in range(0, N, BLOCK_N):
        c = n0 + cols
        mask = row_mask[:, None] & (c[None, :] < N)
        x = tl.load(x_ptr + rows[:, None] * stride_xm + c[None, :], mask=mask, other=0.0)
        r = tl.load(r_ptr + rows[:, None] * stride_rm + c[None, :], mask=mask, other=0.0)
        d = tl.where(mask, x + r - mean[:, None], 0.0)
        acc += d * d
    rstd = tl.rsqrt(tl.sum(acc, axis=1) / N + eps)
    for n0 in range(0, N, BLOCK_N):
        c = n0 + cols
        mask = row_mask[:, None] & (c[None, :] < N)
        x = tl.load(x_ptr + rows[:, None] * stride_xm + c[None, :], mask=mask, other=0.0)
        r = tl.load(r_ptr + rows[:, None] * stride_rm + c[None, :], mask=mask, other=0.0)
        w = tl.load(w_ptr + c, mask=c < N, other=0.0)
        b = tl.load(b_ptr + c, mask=c < N, other=0.0)
        y = (x + r - mean[:, None]) * rstd[:, None] * w[None, :] + b[None, :]
        tl.store(y_ptr + rows[:, None] * stride_ym + c[None, :], y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden_size: int):
        super().__init__()
        self.norm = nn.LayerNorm(hidden_size, eps=1e-5)
        with torch.no_grad():  # same initialisation as the reference (the weights are loaded anyway)
            self.norm.weight.copy_(1.0 + 0.2 * torch.randn(hidden_size))
            self.norm.bias.copy_(0.2 * torch.randn(hidden_size))

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        x2 = x.reshape(-1, shape[-1]).contiguous()
        r2 = residual.reshape(-1, shape[-1]).contiguous()
        M, N = x2.shape
        y = torch.empty_like(x2)
        BLOCK_N = min(triton.next_power_of_2(N), 4096)
        ROWS = max(1, min(64, 4096 // BLOCK_N))
        add_layernorm_kernel[(triton.cdiv(M, ROWS),)](
            x2, r2, self.norm.weight, self.norm.bias, y, M, N, self.norm.eps,
            x2.stride(0), r2.stride(0), y.stride(0),
            ROWS=ROWS, BLOCK_N=BLOCK_N,
        )
        return y.reshape(shape)
