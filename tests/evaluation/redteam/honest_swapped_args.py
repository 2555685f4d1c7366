# ruff: noqa
# expected: nan_or_inf
# Finding F8 (second red-team round). An honest bug, not a cheat: the launch passes (out, x)
# instead of (x, out), so the kernel reads the fresh (NaN-filled) buffer and stores into the
# input. It used to be reported as `input_mutated` (a hack, the lowest reward); the output is
# wrong anyway, so its own failure is reported, with a note on the argument order
# (test_swapped_arguments_get_a_note).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 1024),)](out, x, n, BLOCK=1024)  # arguments swapped by mistake
        return out
