# task: level1/12_CrossEntropy_scalar_output.py
# expected: value_mismatch
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def cross_entropy_kernel(logits_ptr, target_ptr, out_ptr, B, C,
                         BLOCK_B: tl.constexpr, BLOCK_C: tl.constexpr):
    rows = tl.arange(0, BLOCK_B)
    cols = tl.arange(0, BLOCK_C)
    rmask = rows < B
    mask = rmask[:, None] & (cols[None, :] < C)
    x = tl.load(logits_ptr + rows[:, None] * C + cols[None, :], mask=mask, other=float("-inf"))
    m = tl.max(x, axis=1)
    m = tl.where(rmask, m, 0.0)
    e = tl.where(mask, tl.exp(x - m[:, None]), 0.0)
    lse = tl.log(tl.sum(e, axis=1)) + m
    t = tl.load(target_ptr + rows, mask=rmask, other=0)
    picked = tl.sum(tl.where(cols[None, :] == t[:, None], tl.where(mask, x, 0.0), 0.0), axis=1)
    loss = tl.where(rmask, lse - picked, 0.0)
    tl.store(out_ptr, tl.sum(loss, axis=0))


class ModelNew(nn.Module):
    def forward(self, predictions, targets):
        predictions = predictions.contiguous()
        targets = targets.contiguous()
        B, C = predictions.shape
        out = torch.empty((), device=predictions.device, dtype=predictions.dtype)
        cross_entropy_kernel[(1,)](predictions, targets, out, B, C,
                                   BLOCK_B=triton.next_power_of_2(B), BLOCK_C=triton.next_power_of_2(C))
        return out
