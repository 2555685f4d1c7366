import math

import torch
import torch.nn as nn
import torch.nn.functional as F

TASK = {
    "level": 3,
    "category": "transformer_block",
    "description": (
        "A Llama-style pre-norm decoder block in float16: RMSNorm, multi-head causal self-attention "
        "(bias-free q/k/v/o projections), residual add, RMSNorm, SwiGLU MLP (gate/up/down), residual add."
    ),
    "dtype": "float16",
    "atol": 2e-2,
    "rtol": 2e-2,
    "profiles": {
        "full": {"batch_size": 4, "seq_len": 2048, "hidden_size": 4096, "num_heads": 32, "intermediate_size": 11008},
        "small": {"batch_size": 2, "seq_len": 40, "hidden_size": 96, "num_heads": 3, "intermediate_size": 160},
    },
}

batch_size = 4
seq_len = 2048
hidden_size = 4096
num_heads = 32
intermediate_size = 11008
eps = 1e-6


class RMSNorm(nn.Module):
    """Root-mean-square norm computed in float32, cast back, scaled by a learned weight."""

    def __init__(self, hidden_size: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.2 * torch.randn(hidden_size, dtype=torch.float16))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return self.weight * h.to(x.dtype)


class Model(nn.Module):
    """x = x + o_proj(causal_attention(attn_norm(x))); x = x + down(silu(gate(h)) * up(h)), h = mlp_norm(x)."""

    def __init__(self, hidden_size: int, num_heads: int, intermediate_size: int, eps: float):
        super().__init__()
        self.num_heads = num_heads
        self.attn_norm = RMSNorm(hidden_size, eps)
        self.q_proj = nn.Linear(hidden_size, hidden_size, bias=False, dtype=torch.float16)
        self.k_proj = nn.Linear(hidden_size, hidden_size, bias=False, dtype=torch.float16)
        self.v_proj = nn.Linear(hidden_size, hidden_size, bias=False, dtype=torch.float16)
        self.o_proj = nn.Linear(hidden_size, hidden_size, bias=False, dtype=torch.float16)
        self.mlp_norm = RMSNorm(hidden_size, eps)
        self.gate_proj = nn.Linear(hidden_size, intermediate_size, bias=False, dtype=torch.float16)
        self.up_proj = nn.Linear(hidden_size, intermediate_size, bias=False, dtype=torch.float16)
        self.down_proj = nn.Linear(intermediate_size, hidden_size, bias=False, dtype=torch.float16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, S, C = x.shape
        H = self.num_heads
        D = C // H
        h = self.attn_norm(x)
        q = self.q_proj(h).view(B, S, H, D).transpose(1, 2)
        k = self.k_proj(h).view(B, S, H, D).transpose(1, 2)
        v = self.v_proj(h).view(B, S, H, D).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(D)
        causal = torch.triu(torch.ones(S, S, dtype=torch.bool, device=x.device), diagonal=1)
        scores = scores.masked_fill(causal, float("-inf"))
        probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
        attn = torch.matmul(probs, v).transpose(1, 2).reshape(B, S, C)
        x = x + self.o_proj(attn)
        h = self.mlp_norm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


def get_inputs():
    return [torch.randn(batch_size, seq_len, hidden_size, dtype=torch.float16)]


def get_init_inputs():
    return [hidden_size, num_heads, intermediate_size, eps]
