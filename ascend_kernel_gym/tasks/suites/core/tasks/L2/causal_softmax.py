import torch
import torch.nn as nn

TASK = {
    "level": 2,
    "category": "softmax",
    "description": (
        "Scaled, causally masked softmax over attention scores [batch, heads, seq, seq] in float32: "
        "softmax(scores * scale with positions j > i set to -inf) along the last dim."
    ),
    "dtype": "float32",
    "atol": 1e-5,
    "rtol": 1e-4,
    "profiles": {
        "full": {"batch_size": 4, "num_heads": 16, "seq_len": 2048},
        "small": {"batch_size": 2, "num_heads": 3, "seq_len": 45},
    },
}

batch_size = 4
num_heads = 16
seq_len = 2048
scale = 0.125


class Model(nn.Module):
    """masked_fill with an upper-triangular mask, then softmax."""

    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, scores: torch.Tensor) -> torch.Tensor:
        s = scores.shape[-1]
        mask = torch.triu(torch.ones(s, s, dtype=torch.bool, device=scores.device), diagonal=1)
        return torch.softmax((scores * self.scale).masked_fill(mask, float("-inf")), dim=-1)


def get_inputs():
    return [8.0 * torch.randn(batch_size, num_heads, seq_len, seq_len)]


def get_init_inputs():
    return [scale]
