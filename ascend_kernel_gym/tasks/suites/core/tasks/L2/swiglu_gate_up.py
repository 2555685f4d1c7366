import torch
import torch.nn as nn
import torch.nn.functional as F

TASK = {
    "level": 2,
    "category": "matmul",
    "description": (
        "SwiGLU gate/up projection of a Llama MLP in float16: y = silu(x @ W1^T) * (x @ W3^T); "
        "two GEMMs sharing the input, fused with the activation and the product."
    ),
    "dtype": "float16",
    "atol": 1e-2,
    "rtol": 1e-2,
    "profiles": {
        "full": {"num_tokens": 8192, "hidden_size": 4096, "intermediate_size": 11008},
        "small": {"num_tokens": 40, "hidden_size": 96, "intermediate_size": 80},
    },
}

num_tokens = 8192
hidden_size = 4096
intermediate_size = 11008


class Model(nn.Module):
    """silu(w1(x)) * w3(x) with bias-free float16 linear layers."""

    def __init__(self, hidden_size: int, intermediate_size: int):
        super().__init__()
        self.w1 = nn.Linear(hidden_size, intermediate_size, bias=False, dtype=torch.float16)
        self.w3 = nn.Linear(hidden_size, intermediate_size, bias=False, dtype=torch.float16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.silu(self.w1(x)) * self.w3(x)


def get_inputs():
    return [2.0 * torch.randn(num_tokens, hidden_size, dtype=torch.float16)]


def get_init_inputs():
    return [hidden_size, intermediate_size]
