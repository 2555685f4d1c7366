import torch
import torch.nn as nn

TASK = {
    "level": 1,
    "category": "matmul",
    "description": "Square matrix multiplication C = A @ B of two float16 matrices (N, N).",
    "dtype": "float16",
    "atol": 1e-2,
    "rtol": 1e-2,
    "profiles": {"full": {"N": 4096}, "small": {"N": 128}},
}

N = 4096


class Model(nn.Module):
    """Plain matmul of two square matrices."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


def get_inputs():
    return [torch.randn(N, N, dtype=torch.float16), torch.randn(N, N, dtype=torch.float16)]


def get_init_inputs():
    return []
