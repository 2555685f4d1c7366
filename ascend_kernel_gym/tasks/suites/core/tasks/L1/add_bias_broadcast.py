import torch
import torch.nn as nn

TASK = {
    "level": 1,
    "category": "elementwise",
    "description": "Broadcasting add of a per-channel bias (1, C, 1) to a float16 tensor x (B, C, L): "
    "out[b, c, l] = x[b, c, l] + bias[0, c, 0].",
    "dtype": "float16",
    "atol": 1e-2,
    "rtol": 1e-2,
    "profiles": {
        "full": {"batch_size": 64, "channels": 512, "length": 4096},
        "small": {"batch_size": 4, "channels": 24, "length": 333},
    },
}

batch_size = 64
channels = 512
length = 4096


class Model(nn.Module):
    """Adds a channel bias, broadcast over batch and length."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        return x + bias


def get_inputs():
    x = torch.randn(batch_size, channels, length, dtype=torch.float16)
    bias = torch.randn(1, channels, 1, dtype=torch.float16)
    return [x, bias]


def get_init_inputs():
    return []
