# ruff: noqa
# expected: forbidden
# static hole (issue 21): torch.frombuffer wraps the memory of any Python buffer without a copy, also an
# immutable bytes object (PyTorch only warns). Passed to a kernel as an ordinary tensor argument, that
# memory is inside the launch's storages, so the kernel could rewrite a constant string of the process.
# Refused statically, like torch.from_numpy.
import torch
import torch.nn as nn
import triton
import triton.language as tl

NAME = b"torch.serialization.save........"


@triton.jit
def relu_and_poke(x_ptr, out_ptr, n, raw_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)
    tl.store(raw_ptr + tl.arange(0, 8), tl.full((8,), 46, tl.uint8))


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        raw = torch.frombuffer(NAME, dtype=torch.uint8)
        relu_and_poke[(triton.cdiv(n, 1024),)](x, out, n, raw, BLOCK=1024)
        return out
