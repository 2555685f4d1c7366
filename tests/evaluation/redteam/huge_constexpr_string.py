# ruff: noqa
# expected: none
# Issue 21, point 5: a correct kernel that passes a 16 MB string as an unused constexpr. Every
# launch record used to copy it (a result of 117 MB); records keep its start, the result stays
# under 1 MB and a warning says what was cut.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, NOTE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)


_NOTE = "n" * (16 << 20)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024, NOTE=_NOTE)
        return out
