# ruff: noqa
# expected: forbidden
# static hole (issue 21): Triton's interpreter copies its own globals (NumPy as `np`, its native module,
# interpreter_builder, ...) into the module of every kernel it rewrites. This module never imports NumPy,
# yet after the first launch `np` is defined in it: forward launches a decoy kernel, then lets NumPy
# compute the relu. The static stage refuses reading a name the module neither binds nor imports.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def decoy(out_ptr, BLOCK: tl.constexpr):
    tl.store(out_ptr + tl.arange(0, BLOCK), tl.zeros((BLOCK,), tl.float32))


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        decoy[(1,)](out, BLOCK=16)
        out.copy_(torch.as_tensor(np.maximum(np.asarray(x), 0)))
        return out
