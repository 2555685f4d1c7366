import torch
import torch.nn as nn

TASK = {
    "level": 1,
    "category": "matmul",
    "description": "Batched matrix multiplication C[b] = A[b] @ B[b] with A (B, M, K) and B (B, K, N) in float16.",
    "dtype": "float16",
    "atol": 1e-2,
    "rtol": 1e-2,
    "profiles": {
        "full": {"batch_size": 32, "M": 1024, "K": 1024, "N": 1024},
        "small": {"batch_size": 3, "M": 64, "K": 48, "N": 80},
    },
}

batch_size = 32
M = 1024
K = 1024
N = 1024


class Model(nn.Module):
    """torch.bmm over a batch of matrix pairs."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.bmm(A, B)


def get_inputs():
    return [torch.randn(batch_size, M, K, dtype=torch.float16), torch.randn(batch_size, K, N, dtype=torch.float16)]


def get_init_inputs():
    return []
