# ruff: noqa
# expected: forbidden
# hack: yes
# Issue 21: a tensor-like object wrapped in tl.constexpr (Triton's own type): what a constexpr
# wraps is checked too.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class Probe:
    def data_ptr(self):
        return 0


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=tl.constexpr(1024))
        relu_kernel[(1,)](x, tl.constexpr(Probe()), 0, BLOCK=16)
        return out
