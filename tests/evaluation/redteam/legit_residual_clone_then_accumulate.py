# ruff: noqa
# expected: none
# task: core/L2/bias_gelu_residual
# Honest (false-positive hunt of 2026-12-05, night): the output starts as a clone of the residual
# and the kernel adds GELU(x + bias) into it in place, the usual epilogue of a fused GEMM. The
# clone moves nothing; what the kernel writes over it it computed, reading the clone as it would
# read the residual. Refused as torch_fallback before (the clone's taint stayed on the output).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_gelu_into(x_ptr, bias_ptr, out_ptr, n, hidden, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(bias_ptr + offs % hidden, mask=mask, other=0.0).to(tl.float32)
    h = (x + b).to(tl.float16).to(tl.float32)
    g = (0.5 * h * (1.0 + tl.math.erf(h * 0.7071067811865476))).to(tl.float16).to(tl.float32)
    acc = tl.load(out_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offs, (g + acc).to(tl.float16), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden_size):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(hidden_size, dtype=torch.float16))

    def forward(self, x, residual):
        x = x.contiguous()
        out = residual.contiguous().clone()
        n = x.numel()
        add_gelu_into[(triton.cdiv(n, 1024),)](x, self.bias, out, n, x.shape[-1], BLOCK=1024)
        return out
