import torch
import torch.nn as nn

# Sizes written as expressions, as people do.
batch_size = 4 * 4
dim = 2 * 256
half_dim = dim // 2
SCALE = 1.0 / 3.0


class Model(nn.Module):
    """tanh(x[:, :half]) * SCALE: the output has half the columns of the input."""

    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x[:, :half_dim]) * self.scale


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [SCALE]
