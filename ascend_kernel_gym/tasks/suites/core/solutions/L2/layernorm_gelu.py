import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def layernorm_gelu_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr, M, N, eps,
    stride_xm, stride_ym,
    ROWS: tl.constexpr, BLOCK_N: tl.constexpr,
):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    row_mask = rows < M
    cols = tl.arange(0, BLOCK_N)
    # pass 1: mean
    acc = tl.zeros((ROWS, BLOCK_N), dtype=tl.float32)
    for n0 in range(0, N, BLOCK_N):
        c = n0 + cols
        mask = row_mask[:, None] & (c[None, :] < N)
        acc += tl.load(x_ptr + rows[:, None] * stride_xm + c[None, :], mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=1) / N
    # pass 2: variance around the mean
    acc = tl.zeros((ROWS, BLOCK_N), dtype=tl.float32)
    for n0 in range(0, N, BLOCK_N):
        c = n0 + cols
        mask = row_mask[:, None] & (c[None, :] < N)
        x = tl.load(x_ptr + rows[:, None] * stride_xm + c[None, :], mask=mask, other=0.0).to(tl.float32)
        d = tl.where(mask, x - mean[:, None], 0.0)
        acc += d * d
    rstd = tl.rsqrt(tl.sum(acc, axis=1) / N + eps)
    # pass 3: normalise, affine, GELU (tanh form; tanh(u) = 2 * sigmoid(2u) - 1)
    for n0 in range(0, N, BLOCK_N):
        c = n0 + cols
        mask = row_mask[:, None] & (c[None, :] < N)
        x = tl.load(x_ptr + rows[:, None] * stride_xm + c[None, :], mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + c, mask=c < N, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + c, mask=c < N, other=0.0).to(tl.float32)
        h = (x - mean[:, None]) * rstd[:, None] * w[None, :] + b[None, :]
        u = 0.7978845608028654 * (h + 0.044715 * h * h * h)
        y = 0.5 * h * (1.0 + (2.0 * tl.sigmoid(2.0 * u) - 1.0))
        tl.store(y_ptr + rows[:, None] * stride_ym + c[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden_size: int):
        super().__init__()
        self.norm = nn.LayerNorm(hidden_size, eps=1e-5, dtype=torch.float16)
        self.act = nn.GELU(approximate="tanh")
        with torch.no_grad():  # same initialisation as the reference (the weights are loaded anyway)
            self.norm.weight.copy_(1.0 + 0.2 * torch.randn(hidden_size))
            self.norm.bias.copy_(0.2 * torch.randn(hidden_size))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        x2 = x.reshape(-1, shape[-1]).contiguous()
        M, N = x2.shape
        y = torch.empty_like(x2)
        BLOCK_N = min(triton.next_power_of_2(N), 4096)
        ROWS = max(1, min(64, 4096 // BLOCK_N))
        layernorm_gelu_kernel[(triton.cdiv(M, ROWS),)](
            x2, self.norm.weight, self.norm.bias, y, M, N, self.norm.eps,
            x2.stride(0), y.stride(0),
            ROWS=ROWS, BLOCK_N=BLOCK_N,
        )
        return y.reshape(shape)
