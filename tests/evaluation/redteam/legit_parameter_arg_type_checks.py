# ruff: noqa
# expected: none
# task: core/L1/rmsnorm
# Legitimate style (issue 21 false-positive probe): the module's nn.Parameter passed straight to
# the kernel (exactly an nn.Parameter, allowed), the class of an argument compared and printed
# (type(x) / x.__class__ read, never called), a small dataclass of plain values.
import dataclasses

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, y_ptr, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for c0 in range(0, N, BLOCK):
        cols = c0 + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0).to(tl.float32)
        acc += x * x
    rstd = tl.rsqrt(tl.sum(acc, axis=0) / N + eps)
    for c0 in range(0, N, BLOCK):
        cols = c0 + tl.arange(0, BLOCK)
        mask = cols < N
        x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0)
        tl.store(y_ptr + row * N + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


@dataclasses.dataclass(frozen=True)
class Tiling:
    block: int = 512


class ModelNew(nn.Module):
    def __init__(self, hidden_size: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.tiling = Tiling()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        assert isinstance(self.weight, type(self.weight)) and self.weight.__class__.__name__ == "Parameter"
        if type(x) is not torch.Tensor:
            raise TypeError(f"unexpected input class {type(x)}")
        x = x.contiguous()
        N = x.shape[-1]
        y = torch.empty_like(x)
        rmsnorm_kernel[(x.numel() // N,)](x, self.weight, y, N, self.eps, BLOCK=self.tiling.block)
        return y
