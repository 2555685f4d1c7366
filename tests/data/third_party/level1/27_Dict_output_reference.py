import torch
import torch.nn as nn


class Model(nn.Module):
    """Returns a dict of tensors (HuggingFace-style third-party modules do this)."""

    def forward(self, x):
        return {"relu": torch.relu(x), "neg": -x}


def get_inputs():
    return [torch.randn(4, 32)]


def get_init_inputs():
    return []
