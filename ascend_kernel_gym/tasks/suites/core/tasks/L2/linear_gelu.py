import torch
import torch.nn as nn

TASK = {
    "level": 2,
    "category": "matmul",
    "description": (
        "Fused linear layer and exact GELU in float32: y = gelu(x @ W^T + b), the first half of a transformer MLP."
    ),
    "dtype": "float32",
    "atol": 1e-4,
    "rtol": 1e-4,
    "profiles": {
        "full": {"num_tokens": 8192, "in_features": 4096, "out_features": 4096},
        "small": {"num_tokens": 50, "in_features": 72, "out_features": 96},
    },
}

num_tokens = 8192
in_features = 4096
out_features = 4096


class Model(nn.Module):
    """nn.Linear (with bias) followed by nn.GELU (erf form)."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.act = nn.GELU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.linear(x))


def get_inputs():
    return [torch.randn(num_tokens, in_features)]


def get_init_inputs():
    return [in_features, out_features]
