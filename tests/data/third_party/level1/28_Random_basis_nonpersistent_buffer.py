import torch
import torch.nn as nn


class Model(nn.Module):
    """Projects each row onto a fixed random basis drawn at construction and kept as a
    non-persistent buffer (so it is not part of the state dict)."""

    def __init__(self, in_features, out_features):
        super().__init__()
        basis = torch.randn(in_features, out_features) / in_features**0.5
        self.register_buffer("basis", basis, persistent=False)

    def forward(self, x):
        return x @ self.basis


batch = 16
in_features = 64
out_features = 32


def get_inputs():
    return [torch.randn(batch, in_features)]


def get_init_inputs():
    return [in_features, out_features]
