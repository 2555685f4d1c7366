# ruff: noqa
# expected: forbidden
# task: core/L1/cumsum
# interpreter-only: the kernel calls a `@triton.constexpr_function` helper (allowed: "Triton runs it at compile time") with a LOADED BLOCK; on the interpreter constexpr_function passes any value through, so the helper gets the block and reads `.handle.data` (the `.handle` ban applies only inside @triton.jit bodies) and computes ndarray.cumsum() in NumPy. Cannot compile for any device.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.constexpr_function
def host_scan(t):
    h = t.handle
    return tl.tensor(h.__class__(h.data.cumsum(), h.dtype), t.type)


@triton.jit
def scan_kernel(x_ptr, out_ptr, n_cols, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    m = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=m, other=0.0)
    y = host_scan(x)
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
