import torch
import torch.nn as nn

TASK = {
    "level": 2,
    "category": "elementwise",
    "description": (
        "Rotary position embedding (RoPE, rotate-half convention) applied to a float16 query tensor "
        "[batch, heads, seq, head_dim] with precomputed cos/sin tables [seq, head_dim]."
    ),
    "dtype": "float16",
    "atol": 1e-2,
    "rtol": 1e-2,
    "profiles": {
        "full": {"batch_size": 8, "num_heads": 32, "seq_len": 2048, "head_dim": 128},
        "small": {"batch_size": 2, "num_heads": 3, "seq_len": 40, "head_dim": 48},
    },
}

batch_size = 8
num_heads = 32
seq_len = 2048
head_dim = 128
rope_theta = 10000.0


class Model(nn.Module):
    """q * cos + rotate_half(q) * sin, where rotate_half(q) = cat(-q[..., d/2:], q[..., :d/2])."""

    def __init__(self):
        super().__init__()

    def forward(self, q: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        half = q.shape[-1] // 2
        rotated = torch.cat((-q[..., half:], q[..., :half]), dim=-1)
        return q * cos + rotated * sin


def get_inputs():
    q = torch.randn(batch_size, num_heads, seq_len, head_dim, dtype=torch.float16)
    inv_freq = 1.0 / (rope_theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    positions = torch.arange(seq_len, dtype=torch.float32)
    freqs = torch.outer(positions, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return [q, emb.cos().to(torch.float16), emb.sin().to(torch.float16)]


def get_init_inputs():
    return []
