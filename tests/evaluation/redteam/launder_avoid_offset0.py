# ruff: noqa
# expected: torch_fallback
# task: core/L1/transpose
# verbatim memcpy into buf; PyTorch transposes in pieces so no strided copy's source starts at byte 0 (element [0,0,0] copied as a 0-dim contiguous copy)
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
        out = torch.empty(x.shape[0], x.shape[2], x.shape[1], dtype=x.dtype, device=x.device)
        out[0, 0, 0] = buf[0, 0, 0]
        out[0, 0, 1:] = buf[0, 1:, 0]
        out[0, 1:, :] = buf[0, :, 1:].transpose(0, 1)
        out[1:] = buf[1:].transpose(1, 2)
        return out
