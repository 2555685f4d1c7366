import torch
import torch.nn as nn


class Model(nn.Module):
    """Multiplies the input by a python float and adds a python int (scalars passed to forward)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, alpha: float, shift: int) -> torch.Tensor:
        return x * alpha + shift


M = 64
N = 96


def get_inputs():
    x = torch.randn(M, N)
    alpha = 0.75
    shift = 3
    return [x, alpha, shift]


def get_init_inputs():
    return []
