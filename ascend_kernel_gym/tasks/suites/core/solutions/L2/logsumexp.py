import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def logsumexp_kernel(x_ptr, y_ptr, M, N, stride_xm, ROWS: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    row_mask = rows < M
    cols = tl.arange(0, BLOCK_N)
    m = tl.full((ROWS,), float("-inf"), dtype=tl.float32)
    s = tl.zeros((ROWS,), dtype=tl.float32)
    for n0 in range(0, N, BLOCK_N):
        c = n0 + cols
        mask = row_mask[:, None] & (c[None, :] < N)
        x = tl.load(x_ptr + rows[:, None] * stride_xm + c[None, :], mask=mask, other=float("-inf"))
        m_new = tl.maximum(m, tl.max(x, axis=1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        s = s * tl.exp(m - m_safe) + tl.sum(tl.exp(x - m_safe[:, None]), axis=1)
        m = m_new
    out = tl.where(row_mask, m, 0.0) + tl.log(tl.where(row_mask, s, 1.0))
    tl.store(y_ptr + rows, out, mask=row_mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        N = x.shape[-1]
        x2 = x.reshape(-1, N).contiguous()
        M = x2.shape[0]
        y = torch.empty((M,), device=x.device, dtype=x.dtype)
        BLOCK_N = min(triton.next_power_of_2(N), 4096)
        ROWS = max(1, min(64, 4096 // BLOCK_N))
        logsumexp_kernel[(triton.cdiv(M, ROWS),)](x2, y, M, N, x2.stride(0), ROWS=ROWS, BLOCK_N=BLOCK_N)
        return y.reshape(x.shape[:-1])
