import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    """BatchNorm2d in training mode."""

    def __init__(self, num_features: int):
        super().__init__()
        self.bn = nn.BatchNorm2d(num_features=num_features)

    def forward(self, x):
        return self.bn(x)


batch_size = 16
features = 64
dim1 = 256
dim2 = 256


def get_inputs():
    return [torch.randn(batch_size, features, dim1, dim2)]


def get_init_inputs():
    return [features]
