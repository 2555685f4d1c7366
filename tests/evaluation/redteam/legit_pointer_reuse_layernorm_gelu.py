# ruff: noqa
# expected: none
# task: core/L2/layernorm_gelu
# Legitimate (round 5): two-kernel pipeline in fp32. PyTorch upcasts x, kernel 1 = LayerNorm, kernel 2 = GELU,
# PyTorch downcasts. On cuda the caching allocator can hand the freed upcast (tainted as a cast of the input)
# back as kernel 2's output buffer; fresh allocations now drop the taint of their address. On the interpreter
# the address is not reused, so this file checks the legitimate style; bench/gpu_redteam.py covers cuda.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / N
    d = tl.where(mask, x - mean, 0.0)
    var = tl.sum(d * d, axis=0) / N
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * N + cols, d * rstd * w + b, mask=mask)


@triton.jit
def gelu_tanh_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    t = 2.0 / (1.0 + tl.exp(-2.0 * inner)) - 1.0
    tl.store(out_ptr + offs, 0.5 * x * (1.0 + t), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden_size):
        super().__init__()
        self.norm = nn.LayerNorm(hidden_size, eps=1e-5, dtype=torch.float16)

    def _layernorm(self, h):
        M, N = h.shape
        out = torch.empty_like(h)
        layernorm_kernel[(M,)](h, self.norm.weight, self.norm.bias, out, N, 1e-5, BLOCK=triton.next_power_of_2(N))
        return out

    def _gelu(self, h):
        out = torch.empty_like(h)
        n = h.numel()
        gelu_tanh_kernel[(triton.cdiv(n, 1024),)](h, out, n, BLOCK=1024)
        return out

    def forward(self, x):
        shape, dtype = x.shape, x.dtype
        h = x.reshape(-1, shape[-1]).float()  # fp32 working copy of x
        h = self._layernorm(h)  # the working copy is freed here ...
        h = self._gelu(h)  # ... and reused for GELU's output
        return h.to(dtype).reshape(shape)
