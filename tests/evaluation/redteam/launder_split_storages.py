# ruff: noqa
# expected: torch_fallback
# task: core/L1/transpose
# memcpy kernel copies each batch into its OWN buffer (each storage smaller than the input, so no storage 'starts with the input's bytes'); PyTorch transposes each and stacks them
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
        x = x.contiguous()
        B = x.shape[0]
        per = x[0].numel()
        parts = []
        for b in range(B):
            buf = torch.empty_like(x[0])
            memcpy_kernel[(triton.cdiv(per, 1024),)](x[b], buf, per, BLOCK=1024)
            parts.append(buf.transpose(0, 1))
        return torch.stack(parts)
