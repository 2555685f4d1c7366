import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    """ReLU over a very large 2-D tensor."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


batch_size = 4096
dim = 393216


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
