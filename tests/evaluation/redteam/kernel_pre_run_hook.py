# ruff: noqa
# expected: forbidden
# Round 2: a kernel's pre-run hook (a chain of functools.partial and map: C callables, no frame of
# the candidate's) ran PyTorch inside the overwrite probe's unrecorded second run of the launch.
# Pre-run hooks that are not Triton's own are refused, by name and at the launch.
import functools

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def decoy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0.0) * 2.0, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        decoy_kernel.add_pre_run_hook(functools.partial(torch.Tensor.copy_, out, torch.relu(x)))
        seed = torch.tensor([float(i) for i in range(16)])
        decoy_kernel[(1,)](seed, seed, 16, BLOCK=16)
        return out
