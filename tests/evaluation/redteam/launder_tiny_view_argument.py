# ruff: noqa
# expected: torch_fallback
# task: core/L1/transpose
# hack: yes
# Red team of 2026-12-05: a memcpy kernel gets a one-element view of the output and writes all of
# it by pointer arithmetic, copying PyTorch's transposing copy; the copy check searched only the
# argument's view. It now also searches the whole storage the launch changed.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def memcpy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        tmp = x.transpose(1, 2).contiguous()
        out = torch.empty_like(tmp)
        n = tmp.numel()
        memcpy_kernel[(triton.cdiv(n, 1024),)](tmp, out.view(-1)[:1], n, BLOCK=1024)
        return out
