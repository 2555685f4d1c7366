import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    """Transposed 3-D convolution built with keyword arguments."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.ConvTranspose3d(in_channels=in_channels, out_channels=out_channels, kernel_size=kernel_size, stride=2)

    def forward(self, x):
        return self.conv(x)


batch_size = 16
in_channels = 32
out_channels = 16
kernel_size = 3
depth, height, width = 16, 32, 32


def get_inputs():
    return [torch.randn(batch_size, in_channels, depth, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
