import torch
import torch.nn as nn

TASK = {
    "level": 1,
    "category": "matmul",
    "description": "Matrix multiplication with a transposed right operand, C = A @ B.T, with A (M, K) and "
    "B (N, K) in float16 (the layout of a linear layer's weight).",
    "dtype": "float16",
    "atol": 1e-2,
    "rtol": 1e-2,
    "profiles": {"full": {"M": 4096, "K": 4096, "N": 2048}, "small": {"M": 100, "K": 72, "N": 90}},
}

M = 4096
K = 4096
N = 2048


class Model(nn.Module):
    """A @ B.T."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B.T)


def get_inputs():
    return [torch.randn(M, K, dtype=torch.float16), torch.randn(N, K, dtype=torch.float16)]


def get_init_inputs():
    return []
