import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    """3-D tensor times a matrix."""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


N = 16
M = 1024
K = 2048
L = 768


def get_inputs():
    return [torch.randn(N, M, K), torch.randn(K, L)]


def get_init_inputs():
    return []
