import torch
import torch.nn as nn


class Model(nn.Module):
    """ReLU(inplace=True) followed by a scale: the reference modifies its input in place
    (a common pattern in third-party / torchvision-style code)."""

    def __init__(self, scale):
        super().__init__()
        self.act = nn.ReLU(inplace=True)
        self.scale = scale

    def forward(self, x):
        x = self.act(x)
        return x * self.scale


batch = 8
features = 64


def get_inputs():
    return [torch.randn(batch, features)]


def get_init_inputs():
    return [2.0]
