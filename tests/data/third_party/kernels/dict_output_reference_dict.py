# task: level1/27_Dict_output_reference.py
# expected: harness_error
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_neg_kernel(x_ptr, r_ptr, n_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    tl.store(r_ptr + offs, tl.maximum(x, 0.0), mask=m)
    tl.store(n_ptr + offs, -x, mask=m)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        r = torch.empty_like(x)
        ng = torch.empty_like(x)
        n = x.numel()
        relu_neg_kernel[(triton.cdiv(n, 128),)](x, r, ng, n, BLOCK=128)
        return {"relu": r, "neg": ng}
