import torch
import torch.nn as nn
import torch.nn.functional as F

TASK = {
    "level": 1,
    "category": "attention",
    "description": "PyTorch's scaled dot-product attention, float32 (sizes small enough for the CPU).",
    "dtype": "float32",
    "profiles": {
        "full": {"batch": 2, "heads": 2, "seq": 128, "dim": 32},
        "small": {"batch": 2, "heads": 2, "seq": 64, "dim": 32},
    },
}

batch = 2
heads = 2
seq = 128
dim = 32


class Model(nn.Module):
    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v)


def get_inputs():
    return [torch.randn(batch, heads, seq, dim) for _ in range(3)]


def get_init_inputs():
    return []
