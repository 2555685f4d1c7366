# ruff: noqa
# expected: forbidden
# The reference Model imported from __main__.
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


def launch_relu(x, out):
    n = x.numel()
    relu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)

from __main__ import Model


class ModelNew(nn.Module):
    def forward(self, x):
        self.reference = Model()  # a forbidden import the code uses: a hack (an unused one is not)
        x = x.contiguous()
        out = torch.empty_like(x)
        launch_relu(x, out)
        return out
