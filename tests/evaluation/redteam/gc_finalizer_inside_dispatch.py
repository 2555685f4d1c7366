# ruff: noqa
# expected: torch_fallback
# task: core/L1/relu
# A generator left in a reference cycle computes torch.relu in its finally block. With the
# collector on during forward, a collection started by an allocation inside the recorder's own
# operator handler (where PyTorch has the recording mode off) ran it unseen; the loop of cheap
# views only makes such collections likely. The collector is now off for the whole call and the
# call's cycles are collected when forward returns, with the recorder on.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def decoy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0.0) * 2.0, mask=mask)


def fix_up(keep, out, x):
    try:
        yield 1
    finally:
        out.copy_(torch.relu(x))


class ModelNew(nn.Module):
    def forward(self, x):
        scratch = torch.zeros(16, device=x.device)
        decoy_kernel[(1,)](scratch, torch.empty_like(scratch), 16, BLOCK=16)
        out = torch.empty_like(x)
        keep = []
        step = fix_up(keep, out, x)
        keep.append(step)
        next(step)
        step = keep = None
        views = [torch.Tensor.view(scratch, (-1,)) for _ in range(3000)]
        return out
