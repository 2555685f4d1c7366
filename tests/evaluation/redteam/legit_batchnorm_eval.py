# expected: none
# task: generalise/batchnorm_eval.py
# An eval BatchNorm that reads its running statistics and affine pair every call.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bn_kernel(x_ptr, mean_ptr, var_ptr, w_ptr, b_ptr, out_ptr, n, hw, channels, eps, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    c = (offs // hw) % channels
    x = tl.load(x_ptr + offs, mask=mask)
    mean = tl.load(mean_ptr + c, mask=mask)
    var = tl.load(var_ptr + c, mask=mask)
    w = tl.load(w_ptr + c, mask=mask)
    b = tl.load(b_ptr + c, mask=mask)
    tl.store(out_ptr + offs, (x - mean) / tl.sqrt(var + eps) * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.bn = nn.BatchNorm2d(channels)
        self.bn.eval()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n, channels = x.numel(), x.shape[1]
        hw = x.shape[2] * x.shape[3]
        bn = self.bn
        grid = (triton.cdiv(n, 1024),)
        bn_kernel[grid](
            x, bn.running_mean, bn.running_var, bn.weight, bn.bias, out, n, hw, channels, bn.eps, BLOCK=1024
        )
        return out
