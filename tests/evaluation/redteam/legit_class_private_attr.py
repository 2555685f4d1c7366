# ruff: noqa
# expected: none
# task: core/L1/silu
# Legitimate style (false-positive sweep): private class attributes read via the class name (ModelNew._BLOCK) in a @classmethod / @staticmethod, fp16 branch
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def silu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = x / (1.0 + tl.exp(-x))
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    _BLOCK_FP16 = 2048
    _BLOCK_DEFAULT = 1024

    def __init__(self):
        super().__init__()

    @staticmethod
    def block_for(dtype: torch.dtype) -> int:
        if dtype == torch.float16:
            return ModelNew._BLOCK_FP16
        return ModelNew._BLOCK_DEFAULT

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        BLOCK = self.block_for(x.dtype)
        silu_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, BLOCK=BLOCK)
        return y
