import torch
import torch.nn as nn

TASK = {
    "level": 1,
    "category": "normalization",
    "description": "RMSNorm (LLaMA style) over the last dimension of a bfloat16 matrix (M, D): computed in float32, "
    "x * rsqrt(mean(x^2) + eps) * weight, cast back to bfloat16; weight is a float32 parameter, eps 1e-6.",
    "dtype": "bfloat16",
    "atol": 2e-2,
    "rtol": 2e-2,
    "profiles": {"full": {"batch_size": 4096, "hidden": 8192}, "small": {"batch_size": 24, "hidden": 1200}},
}

batch_size = 4096
hidden = 8192
eps = 1e-6


class Model(nn.Module):
    """RMSNorm with a learned per-feature scale."""

    def __init__(self, hidden_size: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.5 * torch.randn(hidden_size))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xf = x.float()
        rms_inv = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return (xf * rms_inv * self.weight).to(x.dtype)


def get_inputs():
    return [torch.randn(batch_size, hidden, dtype=torch.bfloat16)]


def get_init_inputs():
    return [hidden, eps]
