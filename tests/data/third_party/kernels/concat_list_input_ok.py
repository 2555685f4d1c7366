# task: level1/20_Concat_list_input.py
# expected: none
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def axpy_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(a_ptr + offs, mask=m, other=0.0)
    b = tl.load(b_ptr + offs, mask=m, other=0.0)
    tl.store(out_ptr + offs, a + 2.0 * b, mask=m)


class ModelNew(nn.Module):
    def forward(self, tensors):
        a = tensors[0].contiguous()
        b = tensors[1].contiguous()
        out = torch.empty_like(a)
        n = a.numel()
        axpy_kernel[(triton.cdiv(n, 128),)](a, b, out, n, BLOCK=128)
        return out
