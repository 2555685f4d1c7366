# ruff: noqa
# expected: forbidden
# a candidate object passed as a tl.constexpr kernel argument: the recorder's own
# _record_launch calls repr() on it (via _jsonable) with recording SUSPENDED, so its __repr__ computes
# torch.relu into the output unseen; the kernel itself writes nothing.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def noop_kernel(x_ptr, out_ptr, n, TAG: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < 0
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0.0), mask=mask)


class Tag:
    def __init__(self, x, out):
        self.x = x
        self.out = out

    def __repr__(self):
        self.out.copy_(torch.relu(self.x))
        return "Tag"


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        n = x.numel()
        noop_kernel[(triton.cdiv(n, 1024),)](x, out, n, Tag(x, out), BLOCK=1024)
        return out
