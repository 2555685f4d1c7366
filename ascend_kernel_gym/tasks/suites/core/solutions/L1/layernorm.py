import torch
import torch.nn as nn
import triton
import triton.language as tl

MAX_PROGRAMS = 4096


@triton.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, n_rows, n_cols, eps, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    for row in range(pid, n_rows, tl.num_programs(0)):
        row_start = tl.cast(row, tl.int64) * n_cols
        # Pass 1: mean.
        acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
        for col0 in range(0, n_cols, BLOCK_N):
            cols = col0 + tl.arange(0, BLOCK_N)
            acc += tl.load(x_ptr + row_start + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        mean = tl.sum(acc, axis=0) / n_cols
        # Pass 2: biased variance around the mean (two-pass: stable for inputs with a large mean).
        acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
        for col0 in range(0, n_cols, BLOCK_N):
            cols = col0 + tl.arange(0, BLOCK_N)
            mask = cols < n_cols
            x = tl.load(x_ptr + row_start + cols, mask=mask, other=0.0).to(tl.float32)
            d = tl.where(mask, x - mean, 0.0)
            acc += d * d
        rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)
        # Pass 3: normalise, scale, shift.
        for col0 in range(0, n_cols, BLOCK_N):
            cols = col0 + tl.arange(0, BLOCK_N)
            mask = cols < n_cols
            x = tl.load(x_ptr + row_start + cols, mask=mask, other=0.0).to(tl.float32)
            w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
            b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
            y = (x - mean) * rstd * w + b
            tl.store(out_ptr + row_start + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, normalized_shape: int):
        super().__init__()
        # Same parameters (names, shapes, init order) as the reference, so its state_dict loads here.
        self.ln = nn.LayerNorm(normalized_shape, eps=1e-5)
        with torch.no_grad():
            self.ln.weight.uniform_(0.5, 1.5)
            self.ln.bias.uniform_(-0.5, 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_cols = x.shape[-1]
        n_rows = x.numel() // n_cols
        out = torch.empty_like(x)
        BLOCK_N = min(triton.next_power_of_2(n_cols), 1024)
        grid = (max(1, min(n_rows, MAX_PROGRAMS)),)
        layernorm_kernel[grid](
            x, self.ln.weight, self.ln.bias, out, n_rows, n_cols, float(self.ln.eps), BLOCK_N=BLOCK_N
        )
        return out
