import torch
import torch.nn as nn

TASK = {
    "level": 2,
    "category": "normalization",
    "description": (
        "Residual add followed by RMSNorm (Llama style) in bfloat16: h = x + residual, "
        "y = weight * (h / sqrt(mean(h^2) + eps)), statistics in float32."
    ),
    "dtype": "bfloat16",
    "atol": 2e-2,
    "rtol": 2e-2,
    "profiles": {
        "full": {"num_tokens": 16384, "hidden_size": 4096},
        "small": {"num_tokens": 37, "hidden_size": 200},
    },
}

num_tokens = 16384
hidden_size = 4096
eps = 1e-6


class Model(nn.Module):
    """x + residual, then RMSNorm with a learned per-channel weight (computed in float32, cast back)."""

    def __init__(self, hidden_size: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.2 * torch.randn(hidden_size, dtype=torch.bfloat16))
        self.eps = eps

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        h = (x + residual).float()
        variance = h.pow(2).mean(dim=-1, keepdim=True)
        h = h * torch.rsqrt(variance + self.eps)
        return self.weight * h.to(x.dtype)


def get_inputs():
    x = 2.0 * torch.randn(num_tokens, hidden_size, dtype=torch.bfloat16)
    residual = torch.randn(num_tokens, hidden_size, dtype=torch.bfloat16)
    return [x, residual]


def get_init_inputs():
    return [hidden_size, eps]
