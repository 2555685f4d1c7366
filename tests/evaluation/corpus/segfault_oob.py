# ruff: noqa
# expected: out_of_bounds
# expected_on_cuda: crash
# An out-of-bounds pointer in the kernel: the interpreter's memory check refuses the read before it
# happens (a plain failure: it only reads); without the check the process died. On a GPU the device
# reports an illegal address: a crash.
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


@triton.jit
def oob_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + offs + 1_000_000_000_000)
    tl.store(out_ptr + offs, v)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        oob_kernel[(1,)](x, out, x.numel(), BLOCK=16)
        return out
