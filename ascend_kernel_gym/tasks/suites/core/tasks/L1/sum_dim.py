import torch
import torch.nn as nn

TASK = {
    "level": 1,
    "category": "reduction",
    "description": "Sum of a float32 tensor (B, N, D) over its middle dimension, keeping it: output (B, 1, D).",
    "dtype": "float32",
    "atol": 1e-3,
    "rtol": 1e-4,
    "profiles": {
        "full": {"batch_size": 32, "dim1": 2048, "dim2": 2048},
        "small": {"batch_size": 3, "dim1": 300, "dim2": 77},
    },
}

batch_size = 32
dim1 = 2048
dim2 = 2048
reduce_dim = 1


class Model(nn.Module):
    """Sums over one dimension with keepdim=True."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=self.dim, keepdim=True)


def get_inputs():
    return [torch.randn(batch_size, dim1, dim2)]


def get_init_inputs():
    return [reduce_dim]
