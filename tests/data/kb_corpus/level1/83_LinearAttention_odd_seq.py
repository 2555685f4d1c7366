import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    """Linear attention (softmax-free) with an odd sequence length."""

    def __init__(self):
        super().__init__()

    def forward(self, q, k, v):
        return torch.einsum('bnd,bne->bde', F.elu(k) + 1, v).transpose(1, 2) @ (F.elu(q) + 1).transpose(1, 2)


batch_size = 8
seq_len = 4097
head_dim = 64


def get_inputs():
    return [torch.randn(batch_size, seq_len, head_dim) for _ in range(3)]


def get_init_inputs():
    return []
