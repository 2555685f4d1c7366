import torch
import torch.nn as nn
import triton
import triton.language as tl

MAX_PROGRAMS = 4096


@triton.jit
def row_max_kernel(x_ptr, out_ptr, n_rows, n_cols, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    for row in range(pid, n_rows, tl.num_programs(0)):
        row_ptr = x_ptr + tl.cast(row, tl.int64) * n_cols
        acc = tl.full((BLOCK_N,), float("-inf"), dtype=tl.float32)
        for col0 in range(0, n_cols, BLOCK_N):
            cols = col0 + tl.arange(0, BLOCK_N)
            x = tl.load(row_ptr + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
            acc = tl.maximum(acc, x)
        tl.store(out_ptr + row, tl.max(acc, axis=0).to(out_ptr.dtype.element_ty))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_cols = x.shape[-1]
        n_rows = x.numel() // n_cols
        out = torch.empty(x.shape[:-1], dtype=x.dtype, device=x.device)
        BLOCK_N = min(triton.next_power_of_2(n_cols), 1024)
        grid = (max(1, min(n_rows, MAX_PROGRAMS)),)
        row_max_kernel[grid](x, out, n_rows, n_cols, BLOCK_N=BLOCK_N)
        return out
