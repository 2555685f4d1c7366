import torch
import torch.nn as nn

TASK = {
    "level": 1,
    "category": "softmax",
    "description": "LogSoftmax over the last dimension of a float16 matrix (M, N).",
    "dtype": "float16",
    "atol": 1e-2,
    "rtol": 1e-2,
    "profiles": {"full": {"batch_size": 4096, "dim": 8192}, "small": {"batch_size": 13, "dim": 1500}},
}

batch_size = 4096
dim = 8192


class Model(nn.Module):
    """Row-wise log-softmax."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(batch_size, dim, dtype=torch.float16)]


def get_init_inputs():
    return []
