# ruff: noqa
# expected: forbidden
# static hole (issue 21): a binding that never runs (`if False:`) makes the module look as if it defined
# `interpreter_semantic`, so "every read name is bound" would accept it; at run time the name is still
# unbound when the interpreter injects its own semantic object under it, which the kernel then reaches
# (its builder creates loads and stores from raw handles). Names the interpreter injects are refused as
# global names altogether.
import torch
import torch.nn as nn
import triton
import triton.language as tl

if False:
    interpreter_semantic = None


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    builder = interpreter_semantic.builder
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        return out
