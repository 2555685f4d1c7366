# ruff: noqa
# expected: torch_fallback
# task: core/L1/transpose
# The kernel only widens the bf16 input to fp32 (every value unchanged); PyTorch transposes the fp32
# copy with .contiguous() and narrows it back with .to(): no single PyTorch copy both moves an
# unchanged input byte and keeps its dtype, yet the kernel did none of the task's data movement.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def memcpy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


@triton.jit
def upcast_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask).to(tl.float32), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        buf = torch.empty(x.shape, dtype=torch.float32, device=x.device)
        n = x.numel()
        upcast_kernel[(triton.cdiv(n, 1024),)](x, buf, n, BLOCK=1024)
        return buf.transpose(1, 2).contiguous().to(x.dtype)
