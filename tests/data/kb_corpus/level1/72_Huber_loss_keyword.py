import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    """Smooth L1 loss; the shapes passed as keywords."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return F.smooth_l1_loss(predictions, targets)





def get_inputs():
    return [torch.randn(size=(4096, 4095)), torch.randn(size=(4096, 4095))]


def get_init_inputs():
    return []
