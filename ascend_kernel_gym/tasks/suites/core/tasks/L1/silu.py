import torch
import torch.nn as nn

TASK = {
    "level": 1,
    "category": "activation",
    "description": "Elementwise SiLU (swish), x * sigmoid(x), over a 2-D float16 tensor.",
    "dtype": "float16",
    "atol": 1e-2,
    "rtol": 1e-2,
    "profiles": {"full": {"batch_size": 4096, "dim": 16384}, "small": {"batch_size": 32, "dim": 777}},
}

batch_size = 4096
dim = 16384


class Model(nn.Module):
    """Applies SiLU elementwise."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.silu(x)


def get_inputs():
    return [torch.randn(batch_size, dim, dtype=torch.float16)]


def get_init_inputs():
    return []
