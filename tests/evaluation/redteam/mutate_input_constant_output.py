# ruff: noqa
# expected: input_independent
# Returns a constant (zeros, from a kernel) and also zeroes its input. An input changed while the
# output is wrong is reported as the output's own failure, with a note (the honest swapped-argument
# bug); that must not let a cheat trade the `input_independent` verdict for a plain wrong value.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def zero_both_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    zeros = tl.zeros([BLOCK], dtype=tl.float32)
    tl.store(out_ptr + offs, zeros, mask=mask)
    tl.store(x_ptr + offs, zeros, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        n = x.numel()
        zero_both_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        return out
