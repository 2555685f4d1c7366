import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    """MaxPool1d over an odd length."""

    def __init__(self, kernel_size: int, stride: int):
        super().__init__()
        self.pool = nn.MaxPool1d(kernel_size, stride)

    def forward(self, x):
        return self.pool(x)


batch_size = 16
features = 64
sequence_length = 8191
kernel_size = 4
stride = 2


def get_inputs():
    return [torch.randn(batch_size, features, sequence_length)]


def get_init_inputs():
    return [kernel_size, stride]
