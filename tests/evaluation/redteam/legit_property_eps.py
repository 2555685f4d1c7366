# ruff: noqa
# expected: none
# task: core/L1/rmsnorm
# Legitimate style (false-positive sweep): `eps` exposed as a @property over self._eps, read into a local `eps` and passed to the launch; from __future__ import annotations
from __future__ import annotations

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


class ModelNew(nn.Module):
    def __init__(self, hidden_size: int, eps: float):
        super().__init__()
        self._eps = eps
        self.weight = nn.Parameter(torch.ones(hidden_size))

    @property
    def eps(self) -> float:
        return self._eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        N = x.shape[-1]
        M = x.numel() // N
        y = torch.empty_like(x)
        eps = self.eps
        rmsnorm_kernel[(M,)](x, self.weight, y, N, eps, BLOCK=512)
        return y
