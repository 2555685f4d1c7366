import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    """Dilated 1-D convolution with an odd length."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride: int = 1, padding: int = 0, dilation: int = 1, groups: int = 1, bias: bool = False):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, stride=stride, padding=padding, dilation=dilation, groups=groups, bias=bias)

    def forward(self, x):
        return self.conv(x)


batch_size = 16
in_channels = 3
out_channels = 64
kernel_size = 3
length = 131071
dilation = 4


def get_inputs():
    return [torch.randn(batch_size, in_channels, length)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, 1, 0, dilation]
