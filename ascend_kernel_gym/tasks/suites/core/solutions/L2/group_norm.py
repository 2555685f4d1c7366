import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def group_norm_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr, C, HW, G, eps,
    BLOCK: tl.constexpr,
):
    # One program per (sample, group). The group's channels are adjacent, so its
    # C // G * HW elements are contiguous in memory.
    pid = tl.program_id(0)
    g = pid % G
    cpg = C // G
    group_len = cpg * HW
    base = pid * group_len
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i0 in range(0, group_len, BLOCK):
        idx = i0 + offs
        acc += tl.load(x_ptr + base + idx, mask=idx < group_len, other=0.0)
    mean = tl.sum(acc, axis=0) / group_len
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i0 in range(0, group_len, BLOCK):
        idx = i0 + offs
        mask = idx < group_len
        x = tl.load(x_ptr + base + idx, mask=mask, other=0.0)
        d = tl.where(mask, x - mean, 0.0)
        acc += d * d
    rstd = tl.rsqrt(tl.sum(acc, axis=0) / group_len + eps)
    for i0 in range(0, group_len, BLOCK):
        idx = i0 + offs
        mask = idx < group_len
        ch = g * cpg + idx // HW
        x = tl.load(x_ptr + base + idx, mask=mask, other=0.0)
        w = tl.load(w_ptr + ch, mask=mask, other=0.0)
        b = tl.load(b_ptr + ch, mask=mask, other=0.0)
        tl.store(y_ptr + base + idx, (x - mean) * rstd * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_groups: int, num_channels: int):
        super().__init__()
        self.norm = nn.GroupNorm(num_groups, num_channels, eps=1e-5)
        with torch.no_grad():  # same initialisation as the reference (the weights are loaded anyway)
            self.norm.weight.copy_(1.0 + 0.2 * torch.randn(num_channels))
            self.norm.bias.copy_(0.2 * torch.randn(num_channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        N, C = x.shape[0], x.shape[1]
        HW = x.numel() // (N * C)
        G = self.norm.num_groups
        y = torch.empty_like(x)
        BLOCK = min(triton.next_power_of_2(C // G * HW), 4096)
        group_norm_kernel[(N * G,)](x, self.norm.weight, self.norm.bias, y, C, HW, G, self.norm.eps, BLOCK=BLOCK)
        return y
