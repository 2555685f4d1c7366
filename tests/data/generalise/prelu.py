import torch
import torch.nn as nn

batch_size = 32
dim = 500


class Model(nn.Module):
    """nn.PReLU with one learned slope (initialised to 0.25)."""

    def __init__(self):
        super().__init__()
        self.act = nn.PReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(x)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
