import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    """LogSoftmax along a dim constant."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.log_softmax(x, dim=self.dim)


batch_size = 16
dim = 16384
reduce_dim = 1


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [reduce_dim]
