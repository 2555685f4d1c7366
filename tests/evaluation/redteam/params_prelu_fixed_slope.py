# expected: value_mismatch
# task: generalise/prelu.py
# A PReLU with the slope hard-coded to its initial value 0.25 (issue 22).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def prelu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.where(x >= 0, x, 0.25 * x), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = nn.PReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        prelu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        return out
