import torch
import torch.nn as nn

TASK = {
    "level": 2,
    "category": "normalization",
    "description": "Residual add followed by LayerNorm in float32: y = LayerNorm(x + residual) (post-norm block).",
    "dtype": "float32",
    "atol": 1e-4,
    "rtol": 1e-4,
    "profiles": {
        "full": {"num_tokens": 16384, "hidden_size": 4096},
        "small": {"num_tokens": 33, "hidden_size": 300},
    },
}

num_tokens = 16384
hidden_size = 4096


class Model(nn.Module):
    """nn.LayerNorm applied to the sum of two tensors."""

    def __init__(self, hidden_size: int):
        super().__init__()
        self.norm = nn.LayerNorm(hidden_size, eps=1e-5)
        with torch.no_grad():  # non-trivial affine parameters, as in a trained model
            self.norm.weight.copy_(1.0 + 0.2 * torch.randn(hidden_size))
            self.norm.bias.copy_(0.2 * torch.randn(hidden_size))

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.norm(x + residual)


def get_inputs():
    x = 2.0 * torch.randn(num_tokens, hidden_size) + 0.5
    residual = torch.randn(num_tokens, hidden_size)
    return [x, residual]


def get_init_inputs():
    return [hidden_size]
