# ruff: noqa
# expected: none
# legitimate (memory-safe interpreter, issue 21): the kernel runs on views that start inside their
# storages (the flattened input and output shifted by one element, then the first element on its own),
# with a masked tail that ends exactly at the end of the storage. Every access stays inside the storages
# of the tensors passed to the launch, so the memory check lets it through unchanged.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        flat = x.contiguous().view(-1)
        out = torch.empty_like(flat)
        n = flat.numel()
        tail_in, tail_out = flat[1:], out[1:]
        relu_kernel[(triton.cdiv(n - 1, 256),)](tail_in, tail_out, n - 1, BLOCK=256)
        relu_kernel[(1,)](flat[:1], out[:1], 1, BLOCK=256)
        return out.view(x.shape)
