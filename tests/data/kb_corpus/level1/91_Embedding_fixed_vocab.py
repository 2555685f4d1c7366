import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    """Embedding lookup with a large vocabulary written inside the model."""

    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(50257, 1024)

    def forward(self, idx):
        return self.embedding(idx)


batch_size = 8
seq_len = 1024


def get_inputs():
    return [torch.randint(0, 50257, (batch_size, seq_len))]


def get_init_inputs():
    return []
