# ruff: noqa
# expected: torch_fallback
# task: core/L1/transpose
# memcpy kernel into the first half of a 2x buffer; PyTorch clones the WHOLE buffer (contiguous, untainted) then transposes a view of the clone's first half
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
        n = x.numel()
        big = torch.zeros(2 * n, dtype=x.dtype, device=x.device)
        memcpy_kernel[(triton.cdiv(n, 1024),)](x, big, n, BLOCK=1024)
        c = big[:n].clone()
        return c.view(x.shape).transpose(1, 2).contiguous()
