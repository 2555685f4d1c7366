import torch
import torch.nn as nn
import triton
import triton.language as tl

MAX_PROGRAMS = 4096


@triton.jit
def sum_middle_kernel(x_ptr, out_ptr, n_outer, n_reduce, n_inner, BLOCK_R: tl.constexpr, BLOCK_I: tl.constexpr):
    # x is viewed as (n_outer, n_reduce, n_inner); one work item = one outer index and BLOCK_I inner columns.
    pid = tl.program_id(0)
    inner_blocks = tl.cdiv(n_inner, BLOCK_I)
    for item in range(pid, n_outer * inner_blocks, tl.num_programs(0)):
        outer = item // inner_blocks
        cols = (item % inner_blocks) * BLOCK_I + tl.arange(0, BLOCK_I)
        col_mask = cols < n_inner
        base = x_ptr + tl.cast(outer, tl.int64) * n_reduce * n_inner
        acc = tl.zeros((BLOCK_R, BLOCK_I), dtype=tl.float32)
        for r0 in range(0, n_reduce, BLOCK_R):
            rows = r0 + tl.arange(0, BLOCK_R)
            mask = (rows[:, None] < n_reduce) & col_mask[None, :]
            acc += tl.load(base + rows[:, None] * n_inner + cols[None, :], mask=mask, other=0.0).to(tl.float32)
        total = tl.sum(acc, axis=0)
        tl.store(out_ptr + tl.cast(outer, tl.int64) * n_inner + cols, total.to(out_ptr.dtype.element_ty), mask=col_mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        dim = self.dim % x.dim()
        shape = list(x.shape)
        n_outer = 1
        for s in shape[:dim]:
            n_outer *= s
        n_reduce = shape[dim]
        n_inner = x.numel() // max(1, n_outer * n_reduce)
        out_shape = shape[:dim] + [1] + shape[dim + 1 :]
        out = torch.empty(out_shape, dtype=x.dtype, device=x.device)
        BLOCK_R = 32
        BLOCK_I = min(triton.next_power_of_2(max(n_inner, 1)), 128)
        n_items = n_outer * triton.cdiv(n_inner, BLOCK_I)
        grid = (max(1, min(n_items, MAX_PROGRAMS)),)
        sum_middle_kernel[grid](x, out, n_outer, n_reduce, n_inner, BLOCK_R=BLOCK_R, BLOCK_I=BLOCK_I)
        return out
