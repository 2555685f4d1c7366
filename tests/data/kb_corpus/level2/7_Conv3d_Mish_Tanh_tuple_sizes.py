import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    """Conv3d, Mish, Tanh; sizes assigned as tuples."""

    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size)

    def forward(self, x):
        return torch.tanh(F.mish(self.conv(x)))


batch_size, in_channels, out_channels = 16, 3, 16
D, H, W = 16, 64, 64
kernel_size = 3


def get_inputs():
    return [torch.randn(batch_size, in_channels, D, H, W)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
