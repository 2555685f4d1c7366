import torch
import torch.nn as nn

TASK = {
    "level": 1,
    "category": "data_movement",
    "description": "Batched transpose into a new contiguous tensor: x (B, M, N) in bfloat16 -> (B, N, M).",
    "dtype": "bfloat16",
    "atol": 0.0,
    "rtol": 0.0,
    "profiles": {
        "full": {"batch_size": 16, "rows": 4096, "cols": 4096},
        "small": {"batch_size": 3, "rows": 100, "cols": 70},
    },
}

batch_size = 16
rows = 4096
cols = 4096


class Model(nn.Module):
    """Swaps the last two dimensions and materialises the result."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.transpose(1, 2).contiguous()


def get_inputs():
    return [torch.randn(batch_size, rows, cols, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
