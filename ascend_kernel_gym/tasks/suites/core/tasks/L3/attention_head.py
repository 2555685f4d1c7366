import math

import torch
import torch.nn as nn

TASK = {
    "level": 3,
    "category": "attention",
    "description": (
        "A single attention head with projections in float32: q, k, v = x Wq^T, x Wk^T, x Wv^T (with biases), "
        "softmax(q k^T / sqrt(head_dim)) v, then an output projection back to the model width."
    ),
    "dtype": "float32",
    "atol": 1e-3,
    "rtol": 1e-3,
    "profiles": {
        "full": {"batch_size": 8, "seq_len": 2048, "d_model": 4096, "head_dim": 128},
        "small": {"batch_size": 2, "seq_len": 40, "d_model": 80, "head_dim": 48},
    },
}

batch_size = 8
seq_len = 2048
d_model = 4096
head_dim = 128


class Model(nn.Module):
    """q/k/v/o nn.Linear layers around one non-causal softmax attention head."""

    def __init__(self, d_model: int, head_dim: int):
        super().__init__()
        self.q_proj = nn.Linear(d_model, head_dim)
        self.k_proj = nn.Linear(d_model, head_dim)
        self.v_proj = nn.Linear(d_model, head_dim)
        self.o_proj = nn.Linear(head_dim, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
        return self.o_proj(torch.matmul(torch.softmax(scores, dim=-1), v))


def get_inputs():
    return [3.0 * torch.randn(batch_size, seq_len, d_model)]


def get_init_inputs():
    return [d_model, head_dim]
