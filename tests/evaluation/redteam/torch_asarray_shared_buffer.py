# ruff: noqa
# expected: forbidden
# static hole (issue 21): torch.asarray (like torch.frombuffer and torch.from_dlpack) can share the memory of
# an arbitrary Python buffer object instead of allocating; the kernel then writes into it as if it were
# one of its own tensors. Refused statically: outputs and scratch come from torch.empty* / *_like.
import torch
import torch.nn as nn
import triton
import triton.language as tl

SCRATCH = bytearray(64)


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, scratch_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)
    tl.store(scratch_ptr + tl.arange(0, 16), tl.zeros((16,), tl.uint8))


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        shared = torch.asarray(SCRATCH, dtype=torch.uint8)
        relu_kernel[(triton.cdiv(n, 1024),)](x, out, n, shared, BLOCK=1024)
        return out
