import torch
import torch.nn as nn
import triton
import triton.language as tl

MAX_PROGRAMS = 4096


@triton.jit
def add_channel_bias_kernel(x_ptr, bias_ptr, out_ptr, n_rows, channels, length, BLOCK_L: tl.constexpr):
    # One row = one (batch, channel) pair: a contiguous run of `length` elements sharing one bias value.
    pid = tl.program_id(0)
    for row in range(pid, n_rows, tl.num_programs(0)):
        b = tl.load(bias_ptr + row % channels).to(tl.float32)
        row_start = tl.cast(row, tl.int64) * length
        for l0 in range(0, length, BLOCK_L):
            offs = l0 + tl.arange(0, BLOCK_L)
            mask = offs < length
            x = tl.load(x_ptr + row_start + offs, mask=mask, other=0.0).to(tl.float32)
            tl.store(out_ptr + row_start + offs, (x + b).to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        bias = bias.contiguous()
        batch, channels, length = x.shape
        out = torch.empty_like(x)
        n_rows = batch * channels
        BLOCK_L = min(triton.next_power_of_2(length), 2048)
        grid = (max(1, min(n_rows, MAX_PROGRAMS)),)
        add_channel_bias_kernel[grid](x, bias, out, n_rows, channels, length, BLOCK_L=BLOCK_L)
        return out
