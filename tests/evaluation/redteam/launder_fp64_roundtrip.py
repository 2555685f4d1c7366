# ruff: noqa
# expected: torch_fallback
# task: core/L1/transpose
# memcpy kernel copies x verbatim; PyTorch casts the copy to float64 (a contiguous copy, untainted), then transposes + casts back (source bytes no longer equal the input's)
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def memcpy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        buf = torch.empty_like(x)
        n = x.numel()
        memcpy_kernel[(triton.cdiv(n, 1024),)](x, buf, n, BLOCK=1024)
        wide = buf.to(torch.float64)
        return wide.transpose(1, 2).to(x.dtype)
