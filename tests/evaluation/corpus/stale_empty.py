# ruff: noqa
# expected: nan_or_inf
# Returns uninitialised memory from torch.empty, hoping it holds an earlier result.
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
    def forward(self, x):
        scratch = torch.empty(16, device=x.device)
        launch_relu(scratch, torch.empty_like(scratch))
        return torch.empty_like(x)
