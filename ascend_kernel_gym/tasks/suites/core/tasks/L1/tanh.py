import torch
import torch.nn as nn

TASK = {
    "level": 1,
    "category": "activation",
    "description": "Elementwise hyperbolic tangent over a 2-D float32 tensor.",
    "dtype": "float32",
    "atol": 1e-4,
    "rtol": 1e-4,
    "profiles": {"full": {"batch_size": 4096, "dim": 16384}, "small": {"batch_size": 12, "dim": 1200}},
}

batch_size = 4096
dim = 16384


class Model(nn.Module):
    """Applies tanh elementwise."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
