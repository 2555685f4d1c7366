import torch
import torch.nn as nn

TASK = {
    "level": 1,
    "category": "reduction",
    "description": "Argmax of a float32 tensor (B, N, D) over its middle dimension: int64 output (B, D) holding "
    "the index of the first maximum.",
    "dtype": "float32",
    "atol": 0.0,
    "rtol": 0.0,
    "profiles": {
        "full": {"batch_size": 32, "dim1": 2048, "dim2": 2048},
        "small": {"batch_size": 4, "dim1": 300, "dim2": 50},
    },
}

batch_size = 32
dim1 = 2048
dim2 = 2048
reduce_dim = 1


class Model(nn.Module):
    """Index of the maximum along one dimension."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.argmax(x, dim=self.dim)


def get_inputs():
    return [torch.randn(batch_size, dim1, dim2)]


def get_init_inputs():
    return [reduce_dim]
