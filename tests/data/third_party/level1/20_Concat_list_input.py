import torch
import torch.nn as nn


class Model(nn.Module):
    """forward takes a Python LIST of tensors as one argument (torch.cat / torch.stack style tasks)."""

    def __init__(self):
        super().__init__()

    def forward(self, tensors):
        return tensors[0] + 2.0 * tensors[1]


n = 256


def get_inputs():
    return [[torch.randn(n), torch.randn(n)]]


def get_init_inputs():
    return []
