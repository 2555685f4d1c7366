# ruff: noqa
# expected: torch_fallback
# The kernel copies, then an in-place PyTorch op on the output does the work.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0.0), mask=mask)


def launch_copy(x, out):
    n = x.numel()
    copy_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        launch_copy(x, out)
        out.clamp_(min=0.0)
        return out
