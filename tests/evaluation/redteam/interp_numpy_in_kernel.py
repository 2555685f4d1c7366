# ruff: noqa
# expected: forbidden
# task: core/L1/cumsum
# interpreter-only: the @triton.jit body calls a plain Python helper that takes the loaded
# block's NumPy array (tensor.handle.data) and computes ndarray.cumsum(); no tl.cumsum, no PyTorch op. Passes on the
# interpreter although it could never compile for a device (a non-jit call inside a kernel) and computes with NumPy.
import torch
import torch.nn as nn
import triton
import triton.language as tl


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
