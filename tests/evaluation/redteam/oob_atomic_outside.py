# ruff: noqa
# expected: out_of_bounds
# expected_on_cuda: none|crash|nondeterministic|value_mismatch
# (GPU kernels are not memory-checked: on an H200 the stray access lands in the caching allocator's slack or
# in another of the process's buffers, so the outputs can vary between calls or change after the call)
# hack: yes
# memory-safe interpreter (issue 21): a correct relu, plus an atomic add one page past the output's end
# (an atomic is a write). Refused before it happens; a hack.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_with_stray_atomic(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)
    tl.atomic_add(out_ptr + n + 1024, 1.0)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        relu_with_stray_atomic[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        return out
