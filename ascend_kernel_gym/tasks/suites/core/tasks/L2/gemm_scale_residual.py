import torch
import torch.nn as nn

TASK = {
    "level": 2,
    "category": "matmul",
    "description": (
        "GEMM with bias, a scalar scale and a residual add in float32: y = (x @ W^T + b) * scale + residual "
        "(the output projection of a residual branch)."
    ),
    "dtype": "float32",
    "atol": 1e-4,
    "rtol": 1e-4,
    "profiles": {
        "full": {"num_tokens": 8192, "in_features": 4096, "out_features": 4096},
        "small": {"num_tokens": 64, "in_features": 120, "out_features": 72},
    },
}

num_tokens = 8192
in_features = 4096
out_features = 4096
scale = 0.5


class Model(nn.Module):
    """nn.Linear, multiply by a constant, add a residual tensor."""

    def __init__(self, in_features: int, out_features: int, scale: float):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.linear(x) * self.scale + residual


def get_inputs():
    return [torch.randn(num_tokens, in_features), torch.randn(num_tokens, out_features)]


def get_init_inputs():
    return [in_features, out_features, scale]
