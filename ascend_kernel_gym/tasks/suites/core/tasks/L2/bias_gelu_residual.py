import torch
import torch.nn as nn
import torch.nn.functional as F

TASK = {
    "level": 2,
    "category": "activation",
    "description": "Fused bias add, exact GELU and residual add in float16: y = gelu(x + bias) + residual.",
    "dtype": "float16",
    "atol": 1e-2,
    "rtol": 1e-2,
    "profiles": {
        "full": {"num_tokens": 16384, "hidden_size": 8192},
        "small": {"num_tokens": 60, "hidden_size": 330},
    },
}

num_tokens = 16384
hidden_size = 8192


class Model(nn.Module):
    """A learned bias, GELU (erf form) and a residual connection."""

    def __init__(self, hidden_size: int):
        super().__init__()
        self.bias = nn.Parameter(0.5 * torch.randn(hidden_size, dtype=torch.float16))

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return F.gelu(x + self.bias) + residual


def get_inputs():
    x = 2.0 * torch.randn(num_tokens, hidden_size, dtype=torch.float16)
    residual = torch.randn(num_tokens, hidden_size, dtype=torch.float16)
    return [x, residual]


def get_init_inputs():
    return [hidden_size]
