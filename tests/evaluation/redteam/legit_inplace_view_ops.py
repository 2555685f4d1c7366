# ruff: noqa
# expected: none
# Honest (refused as torch_fallback before 2026-12-05): the in-place forms of view operators
# (unsqueeze_, squeeze_, t_, transpose_) change a tensor's shape, never its data.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask, other=0.0), 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        out.unsqueeze_(0)
        out.squeeze_(0)
        return out
