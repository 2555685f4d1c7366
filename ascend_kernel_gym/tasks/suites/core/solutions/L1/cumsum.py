import torch
import torch.nn as nn
import triton
import triton.language as tl

MAX_PROGRAMS = 4096


@triton.jit
def row_cumsum_kernel(x_ptr, out_ptr, n_rows, n_cols, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    for row in range(pid, n_rows, tl.num_programs(0)):
        row_start = tl.cast(row, tl.int64) * n_cols
        carry = 0.0
        for col0 in range(0, n_cols, BLOCK_N):
            cols = col0 + tl.arange(0, BLOCK_N)
            mask = cols < n_cols
            x = tl.load(x_ptr + row_start + cols, mask=mask, other=0.0).to(tl.float32)
            y = tl.cumsum(x, axis=0) + carry
            tl.store(out_ptr + row_start + cols, y.to(out_ptr.dtype.element_ty), mask=mask)
            carry += tl.sum(x, axis=0)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dim = self.dim % x.dim()
        if dim != x.dim() - 1:
            raise ValueError("this kernel scans the last dimension only")
        x = x.contiguous()
        n_cols = x.shape[-1]
        n_rows = x.numel() // n_cols
        out = torch.empty_like(x)
        BLOCK_N = min(triton.next_power_of_2(n_cols), 1024)
        grid = (max(1, min(n_rows, MAX_PROGRAMS)),)
        row_cumsum_kernel[grid](x, out, n_rows, n_cols, BLOCK_N=BLOCK_N)
        return out
