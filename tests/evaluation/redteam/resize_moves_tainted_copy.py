# ruff: noqa
# expected: torch_fallback
# task: core/L1/transpose
# PyTorch's transposing copy is tainted by where it sits; resize_ moved it to new memory without
# a dispatched copy, so the taint stayed behind and the output passed. resize_ now carries the
# taint of what it moves.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def decoy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0.0) * 2.0, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        scratch = torch.zeros(16, device=x.device)
        decoy_kernel[(1,)](scratch, torch.empty_like(scratch), 16, BLOCK=16)
        b, m, n = x.shape
        moved = x.transpose(1, 2).contiguous()
        count = moved.numel()
        moved.resize_(count + 4096)
        return moved[:count].view(b, n, m)
