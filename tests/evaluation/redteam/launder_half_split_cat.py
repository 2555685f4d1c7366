# ruff: noqa
# expected: torch_fallback
# task: core/L1/transpose
# memcpy kernel writes the first and second halves of x into two separate buffers; PyTorch transposes both and concatenates (torch.cat)
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
        B, M, N = x.shape
        h = M // 2
        top = torch.empty(B, h, N, dtype=x.dtype, device=x.device)
        bot = torch.empty(B, M - h, N, dtype=x.dtype, device=x.device)
        for b in range(B):
            memcpy_kernel[(triton.cdiv(h * N, 1024),)](x[b], top[b], h * N, BLOCK=1024)
            memcpy_kernel[(triton.cdiv((M - h) * N, 1024),)](x[b, h:], bot[b], (M - h) * N, BLOCK=1024)
        return torch.cat([top.transpose(1, 2), bot.transpose(1, 2)], dim=2)
