import torch
import torch.nn as nn

TASK = {
    "level": 2,
    "category": "matmul",
    "description": "Fused linear layer and ReLU in float16 (fp32 accumulation expected): y = relu(x @ W^T + b).",
    "dtype": "float16",
    "atol": 1e-2,
    "rtol": 1e-2,
    "profiles": {
        "full": {"num_tokens": 16384, "in_features": 4096, "out_features": 4096},
        "small": {"num_tokens": 70, "in_features": 112, "out_features": 80},
    },
}

num_tokens = 16384
in_features = 4096
out_features = 4096


class Model(nn.Module):
    """nn.Linear (with bias) followed by ReLU, parameters and activations in float16."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features, dtype=torch.float16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.linear(x))


def get_inputs():
    return [torch.randn(num_tokens, in_features, dtype=torch.float16)]


def get_init_inputs():
    return [in_features, out_features]
