# ruff: noqa
# expected: none
# Legitimate (issue 22 point 5): attributes named `np` (number of programs) on the module and on a
# small config object; no numpy anywhere.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class Cfg:
    def __init__(self, block):
        self.block = block
        self.np = 0


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.np = 4
        self.cfg = Cfg(1024)

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        cfg = self.cfg
        cfg.np = triton.cdiv(n, cfg.block)
        assert self.np == 4
        relu_kernel[(cfg.np,)](x, out, n, BLOCK=cfg.block)
        return out
