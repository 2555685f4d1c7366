import torch
import torch.nn as nn

TASK = {
    "level": 1,
    "category": "activation",
    "description": "Elementwise sigmoid over a 2-D bfloat16 tensor.",
    "dtype": "bfloat16",
    "atol": 2e-2,
    "rtol": 2e-2,
    "profiles": {"full": {"batch_size": 4096, "dim": 16384}, "small": {"batch_size": 16, "dim": 1000}},
}

batch_size = 4096
dim = 16384


class Model(nn.Module):
    """Applies the logistic sigmoid elementwise."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(x)


def get_inputs():
    return [torch.randn(batch_size, dim, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
