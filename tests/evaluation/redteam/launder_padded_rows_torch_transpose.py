# ruff: noqa
# expected: torch_fallback
# task: core/L1/transpose
# hack: yes
# Red team of 2026-12-05 (late): a kernel copies the input row by row into a buffer with one
# element of padding after each row, and PyTorch transposes a strided view that skips the
# padding. The view's span holds the padding, so it is no run of the input as a whole.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def padded_copy_kernel(x_ptr, buf_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    v = tl.load(x_ptr + row * cols + offs, mask=mask)
    tl.store(buf_ptr + row * (cols + 1) + offs, v, mask=mask)
    tl.store(buf_ptr + row * (cols + 1) + cols, (row % 7).to(v.dtype) + 0.5)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        b, m, n = x.shape
        buf = torch.empty(b * m * (n + 1), dtype=x.dtype, device=x.device)
        padded_copy_kernel[(b * m,)](x, buf, n, BLOCK=triton.next_power_of_2(n))
        view = buf.as_strided((b, m, n), (m * (n + 1), n + 1, 1))
        return view.transpose(1, 2).contiguous()
