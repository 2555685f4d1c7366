import torch
import torch.nn as nn


class Model(nn.Module):
    """a + b where a is a strided slice (every other column) and b is a transposed matrix:
    both inputs are non-contiguous."""

    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return a + b


M = 16
N = 24


def get_inputs():
    a = torch.randn(M, 2 * N)[:, ::2]     # non-dense: stride (2N, 2)
    b = torch.randn(N, M).t()             # dense but transposed: stride (1, M)
    return [a, b]


def get_init_inputs():
    return []
