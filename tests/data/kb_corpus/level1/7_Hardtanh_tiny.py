import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    """Hardtanh on a tiny tensor."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.hardtanh(x, min_val=-1.0, max_val=1.0)


batch_size = 4
dim = 100


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
