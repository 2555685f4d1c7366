# ruff: noqa
# expected: none
# Legitimate style (false-positive sweep): a module alias made by assignment (`tlm = tl.math`) instead of `import ... as`, used as tlm.<fn> in the kernel
import torch
import torch.nn as nn
import triton
import triton.language as tl

tlm = tl.math


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, tl.where(x > 0, x, 0.0) + 0.0 * tlm.abs(x), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        return y
