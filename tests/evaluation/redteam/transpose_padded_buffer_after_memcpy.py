# ruff: noqa
# expected: torch_fallback
# task: core/L1/transpose
# round 5 variant: the memcpy kernel writes x into a larger buffer at an offset, so the buffer's
# storage as a whole matches no input; PyTorch transposes a view of the copied part.
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
        n = x.numel()
        raw = torch.empty(n + 4096, device=x.device, dtype=x.dtype)
        buf = raw[1024 : 1024 + n]
        memcpy_kernel[(triton.cdiv(n, 1024),)](x, buf, n, BLOCK=1024)
        return buf.view(x.shape).transpose(1, 2).contiguous()
