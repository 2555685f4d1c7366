import math

import torch
import torch.nn as nn

TASK = {
    "level": 2,
    "category": "attention",
    "description": (
        "Multi-head scaled dot-product attention (no mask) in float16: softmax(Q K^T / sqrt(d)) V for "
        "Q, K, V of shape [batch, heads, seq, head_dim]."
    ),
    "dtype": "float16",
    "atol": 5e-2,
    "rtol": 5e-2,
    "profiles": {
        "full": {"batch_size": 4, "num_heads": 32, "seq_len": 2048, "head_dim": 128},
        "small": {"batch_size": 2, "num_heads": 3, "seq_len": 50, "head_dim": 48},
    },
}

batch_size = 4
num_heads = 32
seq_len = 2048
head_dim = 128


class Model(nn.Module):
    """Attention written out with matmul and softmax (the score matrix is materialised)."""

    def __init__(self):
        super().__init__()

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        scores = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
        probs = torch.softmax(scores, dim=-1)
        return torch.matmul(probs, v)


def get_inputs():
    shape = (batch_size, num_heads, seq_len, head_dim)
    q = 1.5 * torch.randn(shape, dtype=torch.float16)
    k = torch.randn(shape, dtype=torch.float16)
    v = torch.randn(shape, dtype=torch.float16)
    return [q, k, v]


def get_init_inputs():
    return []
