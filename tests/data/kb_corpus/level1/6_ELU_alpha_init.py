import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    """ELU with alpha passed to the model."""

    def __init__(self, alpha: float = 1.0):
        super().__init__()
        self.alpha = alpha

    def forward(self, x):
        return F.elu(x, alpha=self.alpha)


batch_size = 16
dim = 16384
alpha = 1.0


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [alpha]
