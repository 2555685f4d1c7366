import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    """Linear, scale, BatchNorm1d."""

    def __init__(self, in_features, out_features, scale_shape):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.scale = nn.Parameter(torch.randn(scale_shape))
        self.bn = nn.BatchNorm1d(out_features)

    def forward(self, x):
        return self.bn(self.gemm(x) * self.scale)


batch_size = 1024
in_features = 8192
out_features = 8192
scale_shape = (out_features,)


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, scale_shape]
