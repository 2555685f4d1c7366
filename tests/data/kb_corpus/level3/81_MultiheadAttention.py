import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    """nn.MultiheadAttention self-attention with a residual and LayerNorm."""

    def __init__(self, embed_dim: int, num_heads: int):
        super().__init__()
        self.attn = nn.MultiheadAttention(embed_dim, num_heads)
        self.norm = nn.LayerNorm(embed_dim)

    def forward(self, x):
        return self.norm(self.attn(x, x, x)[0] + x)


embed_dim = 128
num_heads = 4
batch_size = 2
sequence_length = 128 * 128


def get_inputs():
    return [torch.randn(sequence_length, batch_size, embed_dim)]


def get_init_inputs():
    return [embed_dim, num_heads]
