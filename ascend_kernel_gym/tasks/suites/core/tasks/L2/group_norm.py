import torch
import torch.nn as nn

TASK = {
    "level": 2,
    "category": "normalization",
    "description": (
        "GroupNorm over a float32 [batch, channels, height, width] tensor: statistics per (sample, group of "
        "channels), then a per-channel affine transform."
    ),
    "dtype": "float32",
    "atol": 1e-4,
    "rtol": 1e-4,
    "profiles": {
        "full": {"batch_size": 16, "num_channels": 256, "num_groups": 32, "height": 128, "width": 128},
        "small": {"batch_size": 2, "num_channels": 24, "num_groups": 6, "height": 7, "width": 9},
    },
}

batch_size = 16
num_channels = 256
num_groups = 32
height = 128
width = 128


class Model(nn.Module):
    """nn.GroupNorm with learned per-channel weight and bias."""

    def __init__(self, num_groups: int, num_channels: int):
        super().__init__()
        self.norm = nn.GroupNorm(num_groups, num_channels, eps=1e-5)
        with torch.no_grad():  # non-trivial affine parameters, as in a trained model
            self.norm.weight.copy_(1.0 + 0.2 * torch.randn(num_channels))
            self.norm.bias.copy_(0.2 * torch.randn(num_channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


def get_inputs():
    return [3.0 * torch.randn(batch_size, num_channels, height, width) - 1.0]


def get_init_inputs():
    return [num_groups, num_channels]
