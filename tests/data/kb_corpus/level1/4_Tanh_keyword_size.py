import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    """Tanh; the shape passed as a keyword."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.tanh(x)





def get_inputs():
    return [torch.randn(size=(8192, 8205))]


def get_init_inputs():
    return []
