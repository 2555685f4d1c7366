import torch
import torch.nn as nn

TASK = {
    "level": 2,
    "category": "normalization",
    "description": (
        "LayerNorm over the last dim followed by tanh-approximated GELU, float16 in and out "
        "(statistics in float32 expected)."
    ),
    "dtype": "float16",
    "atol": 1e-2,
    "rtol": 1e-2,
    "profiles": {
        "full": {"num_tokens": 16384, "hidden_size": 4096},
        "small": {"num_tokens": 45, "hidden_size": 176},
    },
}

num_tokens = 16384
hidden_size = 4096


class Model(nn.Module):
    """nn.LayerNorm(hidden_size) then nn.GELU(approximate="tanh"), float16 parameters."""

    def __init__(self, hidden_size: int):
        super().__init__()
        self.norm = nn.LayerNorm(hidden_size, eps=1e-5, dtype=torch.float16)
        self.act = nn.GELU(approximate="tanh")
        with torch.no_grad():  # non-trivial affine parameters, as in a trained model
            self.norm.weight.copy_(1.0 + 0.2 * torch.randn(hidden_size))
            self.norm.bias.copy_(0.2 * torch.randn(hidden_size))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.norm(x))


def get_inputs():
    return [3.0 * torch.randn(num_tokens, hidden_size, dtype=torch.float16) + 1.0]


def get_init_inputs():
    return [hidden_size]
