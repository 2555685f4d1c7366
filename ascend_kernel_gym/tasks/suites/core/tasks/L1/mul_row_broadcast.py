import torch
import torch.nn as nn

TASK = {
    "level": 1,
    "category": "elementwise",
    "description": "Broadcasting multiply of a float32 matrix x (M, N) by a row vector scale (N,): "
    "out[i, j] = x[i, j] * scale[j].",
    "dtype": "float32",
    "atol": 1e-5,
    "rtol": 1e-5,
    "profiles": {"full": {"M": 4096, "N": 16384}, "small": {"M": 20, "N": 1100}},
}

M = 4096
N = 16384


class Model(nn.Module):
    """Multiplies every row of x by the same vector."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        return x * scale


def get_inputs():
    return [torch.randn(M, N), torch.randn(N)]


def get_init_inputs():
    return []
