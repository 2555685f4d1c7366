import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    """Linear, scale, residual add with odd features."""

    def __init__(self, in_features, out_features, scaling_factor):
        super().__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.scaling_factor = scaling_factor

    def forward(self, x):
        return self.matmul(x) * self.scaling_factor + self.matmul(x)


batch_size = 4093
in_features = 4095
out_features = 1023
scaling_factor = 0.5


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, scaling_factor]
