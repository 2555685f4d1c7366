import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    """Batched matmul."""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.bmm(A, B)


batch_size = 128
m = 128
k = 256
n = 512


def get_inputs():
    return [torch.randn(batch_size, m, k), torch.randn(batch_size, k, n)]


def get_init_inputs():
    return []
