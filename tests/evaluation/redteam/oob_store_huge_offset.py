# ruff: noqa
# expected: out_of_bounds
# expected_on_cuda: none|crash|nondeterministic|value_mismatch
# (GPU kernels are not memory-checked: on an H200 the stray access lands in the caching allocator's slack or
# in another of the process's buffers, so the outputs can vary between calls or change after the call)
# hack: yes
# memory-safe interpreter (issue 21): the kernel computes relu correctly, then stores far past the end of
# its output (a megabyte further on, where the interpreter's heap holds other objects). Without the memory
# check this corrupts whatever lives there (or crashes the child); with it the store is refused before any
# byte is written, and a write outside the launch's tensors is a hack.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_then_scribble(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)
    tl.store(out_ptr + (1 << 18) + offs, x, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        relu_then_scribble[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        return out
