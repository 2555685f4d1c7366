# task: level1/8_Tanh_scale_computed_constants.py
# expected: none
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def half_tanh_kernel(x_ptr, out_ptr, in_cols, out_cols, scale, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < out_cols
    x = tl.load(x_ptr + row * in_cols + offs, mask=mask, other=0.0)
    t = 2.0 * tl.sigmoid(2.0 * x) - 1.0
    tl.store(out_ptr + row * out_cols + offs, t * scale, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        x = x.contiguous()
        B, D = x.shape
        H = D // 2
        out = torch.empty((B, H), device=x.device, dtype=x.dtype)
        half_tanh_kernel[(B,)](x, out, D, H, self.scale, BLOCK=triton.next_power_of_2(H))
        return out
