# ruff: noqa
# expected: torch_fallback|no_kernel_launched|forbidden
# ReLU computed in Python: float() on every element (aten item, allowed) and torch.tensor() of
# the Python list (allocation, allowed); a decoy launch on a scratch buffer.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)


def launch_relu(x, out):
    n = x.numel()
    relu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)


class ModelNew(nn.Module):
    def forward(self, x):
        scratch = torch.empty(16, device=x.device)
        launch_relu(scratch, torch.empty_like(scratch))
        rows = [[max(float(v), 0.0) for v in row] for row in x]
        return torch.tensor(rows, dtype=x.dtype, device=x.device)
