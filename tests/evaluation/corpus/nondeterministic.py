# ruff: noqa
# expected: nondeterministic
# Output depends on how often forward was called.
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


def launch_relu(x, out):
    n = x.numel()
    relu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        out = torch.empty_like(x)
        n = x.numel() if self.calls == 1 else x.numel() // 2
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, n, BLOCK=1024)
        if self.calls > 1:
            pad_kernel[(triton.cdiv(x.numel(), 1024),)](out, n, x.numel(), BLOCK=1024)
        return out


@triton.jit
def pad_kernel(out_ptr, start, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.full([BLOCK], 7.0, tl.float32), mask=(offs >= start) & (offs < n))
