import torch
import torch.nn as nn
import triton
import triton.language as tl

MAX_PROGRAMS = 4096


@triton.jit
def mul_row_kernel(x_ptr, scale_ptr, out_ptr, n_rows, n_cols, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    for row in range(pid, n_rows, tl.num_programs(0)):
        row_start = tl.cast(row, tl.int64) * n_cols
        for col0 in range(0, n_cols, BLOCK_N):
            cols = col0 + tl.arange(0, BLOCK_N)
            mask = cols < n_cols
            x = tl.load(x_ptr + row_start + cols, mask=mask, other=0.0)
            s = tl.load(scale_ptr + cols, mask=mask, other=0.0)
            tl.store(out_ptr + row_start + cols, x * s, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        scale = scale.contiguous()
        n_cols = x.shape[-1]
        n_rows = x.numel() // n_cols
        out = torch.empty_like(x)
        BLOCK_N = min(triton.next_power_of_2(n_cols), 1024)
        grid = (max(1, min(n_rows, MAX_PROGRAMS)),)
        mul_row_kernel[grid](x, scale, out, n_rows, n_cols, BLOCK_N=BLOCK_N)
        return out
