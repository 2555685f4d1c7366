import torch
import torch.nn as nn
import triton
import triton.language as tl

MAX_PROGRAMS = 4096


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, out_ptr, n_rows, n_cols, eps, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    for row in range(pid, n_rows, tl.num_programs(0)):
        row_start = tl.cast(row, tl.int64) * n_cols
        acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
        for col0 in range(0, n_cols, BLOCK_N):
            cols = col0 + tl.arange(0, BLOCK_N)
            x = tl.load(x_ptr + row_start + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
            acc += x * x
        rms_inv = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)
        for col0 in range(0, n_cols, BLOCK_N):
            cols = col0 + tl.arange(0, BLOCK_N)
            mask = cols < n_cols
            x = tl.load(x_ptr + row_start + cols, mask=mask, other=0.0).to(tl.float32)
            w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
            tl.store(out_ptr + row_start + cols, (x * rms_inv * w).to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden_size: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.5 * torch.randn(hidden_size))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_cols = x.shape[-1]
        n_rows = x.numel() // n_cols
        out = torch.empty_like(x)
        BLOCK_N = min(triton.next_power_of_2(n_cols), 1024)
        grid = (max(1, min(n_rows, MAX_PROGRAMS)),)
        rmsnorm_kernel[grid](x, self.weight, out, n_rows, n_cols, float(self.eps), BLOCK_N=BLOCK_N)
        return out
