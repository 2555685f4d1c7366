import torch
import torch.nn as nn

TASK = {
    "level": 1,
    "category": "reduction",
    "description": "Mean of a float32 matrix (M, N) over its last dimension: output (M,).",
    "dtype": "float32",
    "atol": 1e-5,
    "rtol": 1e-4,
    "profiles": {"full": {"M": 8192, "N": 8192}, "small": {"M": 24, "N": 1500}},
}

M = 8192
N = 8192


class Model(nn.Module):
    """Averages each row."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.mean(x, dim=-1)


def get_inputs():
    return [torch.randn(M, N)]


def get_init_inputs():
    return []
