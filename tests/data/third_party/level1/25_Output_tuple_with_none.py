import torch
import torch.nn as nn


class Model(nn.Module):
    """Returns (output, None): e.g. an attention module returning (out, attn_weights=None)."""

    def forward(self, x):
        return torch.relu(x), None


def get_inputs():
    return [torch.randn(4, 32)]


def get_init_inputs():
    return []
