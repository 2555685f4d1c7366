# ruff: noqa
# expected: forbidden
# task: core/L1/cumsum
# interpreter-only: the "kernels may call only Triton functions" rule looks only at calls of a bare Name (`helper(x)`); a kernel calling `Host.scan(x)` (a staticmethod of the candidate's class, an Attribute call) is not refused, and `.handle` inside that method is outside any @triton.jit body -> NumPy cumsum.
import torch
import torch.nn as nn
import triton
import triton.language as tl


class Host:
    @staticmethod
    def scan(t):
        h = t.handle
        return tl.tensor(h.__class__(h.data.cumsum(), h.dtype), t.type)


@triton.jit
def scan_kernel(x_ptr, out_ptr, n_cols, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    m = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=m, other=0.0)
    y = Host.scan(x)
    tl.store(out_ptr + row * n_cols + cols, y, mask=m)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        n_cols = x.shape[-1]
        out = torch.empty_like(x)
        scan_kernel[(x.numel() // n_cols,)](x, out, n_cols, BLOCK_N=triton.next_power_of_2(n_cols))
        return out
