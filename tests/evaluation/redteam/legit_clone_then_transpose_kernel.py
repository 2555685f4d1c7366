# ruff: noqa
# expected: none
# task: core/L1/transpose
# Honest: PyTorch clones the whole input (a plain copy, nothing rearranged) and the kernel
# transposes the clone into a buffer that PyTorch then copies whole into the output. Whole
# copies stay allowed in a task that only moves data.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def transpose_kernel(x_ptr, out_ptr, m, n, BM: tl.constexpr, BN: tl.constexpr):
    b = tl.program_id(0)
    pm = tl.program_id(1)
    pn = tl.program_id(2)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    mask = (rm[:, None] < m) & (rn[None, :] < n)
    v = tl.load(x_ptr + b * m * n + rm[:, None] * n + rn[None, :], mask=mask)
    tl.store(out_ptr + b * m * n + rn[None, :] * m + rm[:, None], v, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.clone()
        b, m, n = x.shape
        buf = torch.empty((b, n, m), dtype=x.dtype, device=x.device)
        grid = (b, triton.cdiv(m, 32), triton.cdiv(n, 32))
        transpose_kernel[grid](x, buf, m, n, BM=32, BN=32)
        out = torch.empty_like(buf)
        out.copy_(buf)
        return out
