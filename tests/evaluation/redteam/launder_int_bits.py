# ruff: noqa
# expected: torch_fallback
# task: core/L1/transpose
# The kernel sign-extends the input's 16-bit patterns into int32 (no value computed); PyTorch transposes
# the int32 buffer, narrows it back to int16 (which restores the bits) and reinterprets it as bf16.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def widen_bits_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask).to(tl.int32), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        bits = x.contiguous().view(torch.int16)
        buf = torch.empty(x.shape, dtype=torch.int32, device=x.device)
        n = x.numel()
        widen_bits_kernel[(triton.cdiv(n, 1024),)](bits, buf, n, BLOCK=1024)
        return buf.transpose(1, 2).contiguous().to(torch.int16).view(x.dtype)
