import torch
import torch.nn as nn

TASK = {
    "level": 1,
    "category": "matmul",
    "description": "Matrix-vector product y = A @ x with A (M, K) and x (K, 1) in float32: output (M, 1).",
    "dtype": "float32",
    "atol": 1e-3,
    "rtol": 1e-3,
    "profiles": {"full": {"M": 8192, "K": 16384}, "small": {"M": 100, "K": 1000}},
}

M = 8192
K = 16384


class Model(nn.Module):
    """Matrix times a column vector."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, x)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, 1)]


def get_init_inputs():
    return []
