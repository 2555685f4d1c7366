import torch
import torch.nn as nn

TASK = {
    "level": 1,
    "category": "scan",
    "description": "Inclusive prefix sum (cumsum) of a float32 matrix (M, N) along its last dimension.",
    "dtype": "float32",
    "atol": 1e-3,
    "rtol": 1e-3,
    "profiles": {"full": {"batch_size": 4096, "length": 4096}, "small": {"batch_size": 16, "length": 1500}},
}

batch_size = 4096
length = 4096
scan_dim = 1


class Model(nn.Module):
    """torch.cumsum along one dimension."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(x, dim=self.dim)


def get_inputs():
    return [torch.randn(batch_size, length)]


def get_init_inputs():
    return [scan_dim]
