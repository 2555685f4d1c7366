import torch
import torch.nn as nn

TASK = {
    "level": 1,
    "category": "normalization",
    "description": "LayerNorm over the last dimension of a float32 matrix (M, D), with a learned elementwise "
    "affine (weight and bias of an nn.LayerNorm, initialised away from ones/zeros), eps 1e-5.",
    "dtype": "float32",
    "atol": 1e-4,
    "rtol": 1e-4,
    "profiles": {"full": {"batch_size": 4096, "hidden": 8192}, "small": {"batch_size": 24, "hidden": 1500}},
}

batch_size = 4096
hidden = 8192


class Model(nn.Module):
    """nn.LayerNorm(hidden) with non-trivial affine parameters."""

    def __init__(self, normalized_shape: int):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape, eps=1e-5)
        with torch.no_grad():
            self.ln.weight.uniform_(0.5, 1.5)
            self.ln.bias.uniform_(-0.5, 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x)


def get_inputs():
    return [torch.randn(batch_size, hidden)]


def get_init_inputs():
    return [hidden]
