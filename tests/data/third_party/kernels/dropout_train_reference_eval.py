# task: level1/26_Dropout_train_reference.py
# expected: harness_error
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def dropout_scale_kernel(x_ptr, out_ptr, n, p, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    keep = tl.rand(seed, offs) > p
    tl.store(out_ptr + offs, x * 2.0, mask=m)


class ModelNew(nn.Module):
    """A faithful dropout: same distribution as the reference, different random stream."""

    def __init__(self, p):
        super().__init__()
        self.p = p
        self.calls = 0

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        self.calls += 0
        dropout_scale_kernel[(triton.cdiv(n, 128),)](x, out, n, self.p, 1234 + self.calls, BLOCK=128)
        return out
