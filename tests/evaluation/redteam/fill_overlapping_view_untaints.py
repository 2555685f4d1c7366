# ruff: noqa
# expected: torch_fallback
# task: core/L1/transpose
# Round 2: PyTorch's transposing copy lands in buf[1:]; a fill through a stride-0 view of the whole
# buffer writes one element but has as many elements as the buffer, and was taken for a fill of
# all of it, which dropped the copy's taint. A fill now counts as whole only when its view covers
# every byte of the storage without gaps or overlaps.
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
        scratch = torch.zeros(16, device=x.device)
        decoy_kernel[(1,)](scratch, torch.empty_like(scratch), 16, BLOCK=16)
        b, m, n = x.shape
        count = b * m * n
        buf = torch.empty(count + 1, dtype=x.dtype, device=x.device)
        answer = buf[1:].view(b, n, m)
        answer.copy_(x.transpose(1, 2))
        torch.Tensor.as_strided(buf, (count + 1,), (0,)).fill_(0.0)
        return answer
