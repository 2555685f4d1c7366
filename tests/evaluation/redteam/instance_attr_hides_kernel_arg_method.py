# ruff: noqa
# expected: forbidden
# task: core/L1/tanh
# Triton's interpreter copies kernel arguments with recording suspended and calls
# storage_offset() through the instance: an instance attribute of the candidate's answered with
# a function that computed tanh. A kernel argument whose instance attributes hide the tensor's
# own is refused (and operators the candidate's code issues in such a window count anyway).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def decoy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0.0) * 2.0, mask=mask)


def offset_that_computes(out, x):
    def storage_offset():
        out.copy_(torch.tanh(x))
        return 0

    return storage_offset


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        scratch = torch.zeros(16)
        scratch.storage_offset = offset_that_computes(out, x)
        decoy_kernel[(1,)](scratch, torch.empty_like(scratch), 16, BLOCK=16)
        return out
