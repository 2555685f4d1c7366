import torch
import torch.nn as nn

TASK = {
    "level": 1,
    "category": "reduction",
    "description": "Maximum of a float16 matrix (M, N) over its last dimension (values only): output (M,).",
    "dtype": "float16",
    "atol": 1e-2,
    "rtol": 1e-2,
    "profiles": {"full": {"M": 8192, "N": 8192}, "small": {"M": 24, "N": 1500}},
}

M = 8192
N = 8192


class Model(nn.Module):
    """Row-wise maximum."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.max(x, dim=-1).values


def get_inputs():
    return [torch.randn(M, N, dtype=torch.float16)]


def get_init_inputs():
    return []
