import math

import torch
import torch.nn as nn

TASK = {
    "level": 3,
    "category": "transformer_block",
    "description": (
        "A GPT-2 style pre-LayerNorm transformer block in float32: LayerNorm, causal multi-head self-attention "
        "(fused qkv projection with bias, output projection), residual add, LayerNorm, MLP "
        "Linear(d, 4d) + tanh-GELU + Linear(4d, d), residual add."
    ),
    "dtype": "float32",
    "atol": 1e-3,
    "rtol": 1e-3,
    "profiles": {
        "full": {"batch_size": 8, "seq_len": 1024, "d_model": 1600, "num_heads": 25},
        "small": {"batch_size": 2, "seq_len": 30, "d_model": 80, "num_heads": 5},
    },
}

batch_size = 8
seq_len = 1024
d_model = 1600
num_heads = 25


class Model(nn.Module):
    """x = x + attn_proj(causal_attention(ln_1(x))); x = x + mlp_proj(gelu(mlp_fc(ln_2(x))))."""

    def __init__(self, d_model: int, num_heads: int):
        super().__init__()
        self.num_heads = num_heads
        self.ln_1 = nn.LayerNorm(d_model)
        self.attn_qkv = nn.Linear(d_model, 3 * d_model)
        self.attn_proj = nn.Linear(d_model, d_model)
        self.ln_2 = nn.LayerNorm(d_model)
        self.mlp_fc = nn.Linear(d_model, 4 * d_model)
        self.act = nn.GELU(approximate="tanh")
        self.mlp_proj = nn.Linear(4 * d_model, d_model)
        with torch.no_grad():  # non-trivial LayerNorm parameters, as in a trained model
            for norm in (self.ln_1, self.ln_2):
                norm.weight.copy_(1.0 + 0.2 * torch.randn(d_model))
                norm.bias.copy_(0.2 * torch.randn(d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, S, C = x.shape
        H = self.num_heads
        D = C // H
        q, k, v = self.attn_qkv(self.ln_1(x)).view(B, S, 3, H, D).permute(2, 0, 3, 1, 4).unbind(0)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(D)
        causal = torch.triu(torch.ones(S, S, dtype=torch.bool, device=x.device), diagonal=1)
        probs = torch.softmax(scores.masked_fill(causal, float("-inf")), dim=-1)
        attn = torch.matmul(probs, v).transpose(1, 2).reshape(B, S, C)
        x = x + self.attn_proj(attn)
        return x + self.mlp_proj(self.act(self.mlp_fc(self.ln_2(x))))


def get_inputs():
    return [torch.randn(batch_size, seq_len, d_model)]


def get_init_inputs():
    return [d_model, num_heads]
