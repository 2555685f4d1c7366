# task: level1/24_BCE_probabilities.py
# expected: none
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bce_kernel(p_ptr, t_ptr, out_ptr, N, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, N, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        m = offs < N
        p = tl.load(p_ptr + offs, mask=m, other=0.5)
        t = tl.load(t_ptr + offs, mask=m, other=0.0)
        lp = tl.maximum(tl.log(p), -100.0)
        l1p = tl.maximum(tl.log(1.0 - p), -100.0)
        acc += tl.where(m, -(t * lp + (1.0 - t) * l1p), 0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0) / N)


class ModelNew(nn.Module):
    def forward(self, predictions, targets):
        p = predictions.contiguous()
        t = targets.contiguous()
        out = torch.empty((), dtype=p.dtype, device=p.device)
        bce_kernel[(1,)](p, t, out, p.numel(), BLOCK=1024)
        return out
