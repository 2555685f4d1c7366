import math

import torch
import torch.nn as nn

TASK = {
    "level": 3,
    "category": "attention",
    "description": (
        "Multi-head self-attention block in float16 (encoder style, no mask): a fused qkv projection "
        "Linear(d, 3d), per-head softmax(q k^T / sqrt(head_dim)) v, and an output projection Linear(d, d)."
    ),
    "dtype": "float16",
    "atol": 5e-2,
    "rtol": 5e-2,
    "profiles": {
        "full": {"batch_size": 8, "seq_len": 2048, "d_model": 4096, "num_heads": 32},
        "small": {"batch_size": 2, "seq_len": 33, "d_model": 96, "num_heads": 4},
    },
}

batch_size = 8
seq_len = 2048
d_model = 4096
num_heads = 32


class Model(nn.Module):
    """qkv = Linear(x); split into heads; attention per head; merge heads; out_proj."""

    def __init__(self, d_model: int, num_heads: int):
        super().__init__()
        self.num_heads = num_heads
        self.qkv = nn.Linear(d_model, 3 * d_model, dtype=torch.float16)
        self.out_proj = nn.Linear(d_model, d_model, dtype=torch.float16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, S, C = x.shape
        H = self.num_heads
        D = C // H
        q, k, v = self.qkv(x).view(B, S, 3, H, D).permute(2, 0, 3, 1, 4).unbind(0)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(D)
        attn = torch.matmul(torch.softmax(scores, dim=-1), v)
        return self.out_proj(attn.transpose(1, 2).reshape(B, S, C))


def get_inputs():
    return [3.0 * torch.randn(batch_size, seq_len, d_model, dtype=torch.float16)]


def get_init_inputs():
    return [d_model, num_heads]
