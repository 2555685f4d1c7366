# ruff: noqa
# expected: forbidden
# Tensor.map_(x, fn) (CPU-only, calls a Python callable per element) is implemented in C++ without
# going through the dispatcher: the TorchDispatchMode sees nothing and the taint tracker sees no write. A decoy kernel
# launch satisfies "a kernel ran"; Python computes relu element by element into an untainted empty_like output.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def noop_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < 0
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        n = x.numel()
        noop_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        out.map_(x, lambda o, v: v if v > 0.0 else 0.0)
        return out
