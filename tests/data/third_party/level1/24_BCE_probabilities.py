import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Binary cross-entropy on probabilities (mean reduction -> 0-d tensor).
    Predictions come from torch.rand, so they lie in [0, 1) as BCE requires."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return F.binary_cross_entropy(predictions, targets)


batch_size = 16
dim = 64


def get_inputs():
    predictions = torch.rand(batch_size, dim) * 0.98 + 0.01
    targets = torch.randint(0, 2, (batch_size, dim)).float()
    return [predictions, targets]


def get_init_inputs():
    return []
