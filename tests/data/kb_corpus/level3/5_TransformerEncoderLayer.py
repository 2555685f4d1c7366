import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    """One Transformer encoder layer (d_model divisible by nhead)."""

    def __init__(self, d_model, nhead, dim_feedforward):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout=0.0, batch_first=True)

    def forward(self, x):
        return self.layer(x)


batch_size = 32
seq_len = 1024
d_model = 512
nhead = 8
dim_feedforward = 2048


def get_inputs():
    return [torch.randn(batch_size, seq_len, d_model)]


def get_init_inputs():
    return [d_model, nhead, dim_feedforward]
