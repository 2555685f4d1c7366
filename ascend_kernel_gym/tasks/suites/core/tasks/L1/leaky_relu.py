import torch
import torch.nn as nn

TASK = {
    "level": 1,
    "category": "activation",
    "description": "Elementwise LeakyReLU with a negative slope given at construction, over a 2-D float16 tensor.",
    "dtype": "float16",
    "atol": 1e-2,
    "rtol": 1e-2,
    "profiles": {"full": {"batch_size": 4096, "dim": 16384}, "small": {"batch_size": 16, "dim": 999}},
}

batch_size = 4096
dim = 16384
negative_slope = 0.1


class Model(nn.Module):
    """Applies LeakyReLU(x) = x if x >= 0 else negative_slope * x, elementwise."""

    def __init__(self, negative_slope: float):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.leaky_relu(x, negative_slope=self.negative_slope)


def get_inputs():
    return [torch.randn(batch_size, dim, dtype=torch.float16)]


def get_init_inputs():
    return [negative_slope]
