# task: level1/22_Strided_slice_input.py
# expected: nan_or_inf
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add2d_kernel(a_ptr, b_ptr, out_ptr, M, N, sam, san, sbm, sbn, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    c = tl.arange(0, BLOCK)
    m = c < N
    a = tl.load(a_ptr + r * sam + c * san, mask=m, other=0.0)
    b = tl.load(b_ptr + r * sbm + c * sbn, mask=m, other=0.0)
    tl.store(out_ptr + r * N + c, a + b, mask=m)


class ModelNew(nn.Module):
    def forward(self, a, b):
        M, N = a.shape
        out = torch.empty((M, N), dtype=a.dtype, device=a.device)
        add2d_kernel[(M,)](a, b, out, M, N, N, 1, b.stride(0), b.stride(1),
                           BLOCK=triton.next_power_of_2(N))
        return out
