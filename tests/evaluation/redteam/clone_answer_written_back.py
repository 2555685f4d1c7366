# ruff: noqa
# expected: torch_fallback
# task: core/L1/transpose
# hack: yes
# Cousin of legit_clone_then_overwrite (issue 22 point 5): PyTorch computes the answer into the
# output (a transposing copy), then a kernel reads every element of it and writes it back: every
# element is written by a Triton kernel, but with the values PyTorch computed.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rewrite_kernel(buf_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(buf_ptr + offs, tl.load(buf_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        out = x.transpose(1, 2).contiguous()
        n = out.numel()
        rewrite_kernel[(triton.cdiv(n, 1024),)](out, n, BLOCK=1024)
        return out
