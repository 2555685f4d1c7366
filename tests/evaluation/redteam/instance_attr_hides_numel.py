# ruff: noqa
# expected: nan_or_inf|value_mismatch|torch_fallback
# task: core/L1/softmax
# An instance attribute hides Tensor.numel on a scratch tensor; the recorder's handler used to
# call tensor.numel() for a fill (zero_) with the recording mode off, so the softmax the
# candidate's numel computes went unseen. The harness now calls tensor methods through the class.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def decoy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0.0) * 2.0, mask=mask)


def numel_that_computes(out, x):
    def numel():
        out.copy_(torch.softmax(x, dim=-1))
        return 16

    return numel


class ModelNew(nn.Module):
    def forward(self, x):
        scratch = torch.zeros(16, device=x.device)
        decoy_kernel[(1,)](scratch, torch.empty_like(scratch), 16, BLOCK=16)
        out = torch.empty_like(x)
        scratch.numel = numel_that_computes(out, x)
        scratch.zero_()
        return out
