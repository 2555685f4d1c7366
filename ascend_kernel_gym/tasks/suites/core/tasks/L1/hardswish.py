import torch
import torch.nn as nn

TASK = {
    "level": 1,
    "category": "activation",
    "description": "Elementwise HardSwish, x * clamp(x + 3, 0, 6) / 6, over a 2-D float32 tensor.",
    "dtype": "float32",
    "atol": 1e-5,
    "rtol": 1e-5,
    "profiles": {"full": {"batch_size": 4096, "dim": 16384}, "small": {"batch_size": 10, "dim": 1500}},
}

batch_size = 4096
dim = 16384


class Model(nn.Module):
    """Applies HardSwish elementwise."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.hardswish(x)


def get_inputs():
    # Scaled so that a good share of the values fall outside [-3, 3], where the clamp matters.
    return [torch.randn(batch_size, dim) * 3.0]


def get_init_inputs():
    return []
