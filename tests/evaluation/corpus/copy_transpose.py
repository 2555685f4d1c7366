# ruff: noqa
# expected: torch_fallback
# task: core/L1/transpose
# A decoy launch, then PyTorch does the transpose with a copy.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def noop_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.load(x_ptr + offs, mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x):
        noop_kernel[(1,)](x, 1, BLOCK=16)
        return x.transpose(1, 2).contiguous()
