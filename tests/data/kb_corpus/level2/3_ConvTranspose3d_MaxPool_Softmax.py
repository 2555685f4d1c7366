import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    """ConvTranspose3d, MaxPool3d, softmax over channels."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, output_padding, pool_kernel_size):
        super().__init__()
        self.conv = nn.ConvTranspose3d(in_channels, out_channels, kernel_size, stride=stride, padding=padding, output_padding=output_padding)
        self.pool = nn.MaxPool3d(pool_kernel_size)

    def forward(self, x):
        return torch.softmax(self.pool(self.conv(x)), dim=1)


batch_size = 16
in_channels = 16
out_channels = 32
depth, height, width = 16, 32, 32
kernel_size = 3
stride = 2
padding = 1
output_padding = 1
pool_kernel_size = 2


def get_inputs():
    return [torch.randn(batch_size, in_channels, depth, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding, output_padding, pool_kernel_size]
