# ruff: noqa
# expected: torch_fallback|no_kernel_launched
# task: core/L1/transpose
# Like transpose_torch_copy, but the output buffer is first handed to a kernel launch that
# writes nothing (mask all false); PyTorch's copy_ then fills it. The output's storage *was* a
# kernel argument, so an "output must be a kernel argument" rule alone does not catch it.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def touch_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros((BLOCK,), dtype=tl.float32), mask=offs < 0)


class ModelNew(nn.Module):
    def forward(self, x):
        b, r, c = x.shape
        out = torch.empty((b, c, r), device=x.device, dtype=x.dtype)
        touch_kernel[(1,)](out, out.numel(), BLOCK=16)
        out.copy_(x.transpose(1, 2))
        return out
