import torch
import torch.nn as nn

TASK = {
    "level": 1,
    "category": "matmul",
    "description": "Rectangular matrix multiplication C = A @ B with A (M, K) and B (K, N) in float32 "
    "(full float32 precision expected: TF32 is not accurate enough for the tolerance).",
    "dtype": "float32",
    "atol": 1e-3,
    "rtol": 1e-3,
    "profiles": {"full": {"M": 4096, "K": 2048, "N": 8192}, "small": {"M": 96, "K": 80, "N": 112}},
}

M = 4096
K = 2048
N = 8192


class Model(nn.Module):
    """Plain matmul of an (M, K) and a (K, N) matrix."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
