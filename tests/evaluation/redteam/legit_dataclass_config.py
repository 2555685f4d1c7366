# ruff: noqa
# expected: none
# Legitimate: a @dataclass holds the launch configuration (dataclasses is on the import
# allow-list; the decorator runs exec internally).
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


import dataclasses


@dataclasses.dataclass(frozen=True)
class LaunchConfig:
    block: int = 1024


CONFIG = LaunchConfig()


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, CONFIG.block),)](x, out, n, BLOCK=CONFIG.block)
        return out
