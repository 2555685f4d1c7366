import math

import torch
import torch.nn as nn

TASK = {
    "level": 2,
    "category": "attention",
    "description": (
        "Single-token decode attention with grouped-query attention (GQA) over a float16 KV cache: "
        "q [batch, q_heads, head_dim] attends to k/v [batch, kv_heads, cache_len, head_dim]; "
        "query head h uses kv head h // (q_heads // kv_heads)."
    ),
    "dtype": "float16",
    "atol": 1e-2,
    "rtol": 1e-2,
    "profiles": {
        "full": {"batch_size": 16, "num_q_heads": 32, "num_kv_heads": 8, "cache_len": 4096, "head_dim": 128},
        "small": {"batch_size": 2, "num_q_heads": 6, "num_kv_heads": 2, "cache_len": 70, "head_dim": 64},
    },
}

batch_size = 16
num_q_heads = 32
num_kv_heads = 8
cache_len = 4096
head_dim = 128


class Model(nn.Module):
    """Decode-step attention: the KV heads are repeated to the query heads, then softmax(q k^T / sqrt(d)) v."""

    def __init__(self):
        super().__init__()

    def forward(self, q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor) -> torch.Tensor:
        group = q.shape[1] // k_cache.shape[1]
        k = k_cache.repeat_interleave(group, dim=1)
        v = v_cache.repeat_interleave(group, dim=1)
        scores = torch.matmul(q.unsqueeze(2), k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
        probs = torch.softmax(scores, dim=-1)
        return torch.matmul(probs, v).squeeze(2)


def get_inputs():
    q = 2.0 * torch.randn(batch_size, num_q_heads, head_dim, dtype=torch.float16)
    k_cache = torch.randn(batch_size, num_kv_heads, cache_len, head_dim, dtype=torch.float16)
    v_cache = torch.randn(batch_size, num_kv_heads, cache_len, head_dim, dtype=torch.float16)
    return [q, k_cache, v_cache]


def get_init_inputs():
    return []
