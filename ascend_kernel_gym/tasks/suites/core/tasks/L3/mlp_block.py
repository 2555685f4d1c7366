import torch
import torch.nn as nn

TASK = {
    "level": 3,
    "category": "mlp",
    "description": (
        "Transformer MLP block in float16: Linear(hidden -> 4*hidden) + tanh-GELU + Linear(4*hidden -> hidden), "
        "input [batch, seq, hidden]."
    ),
    "dtype": "float16",
    "atol": 2e-2,
    "rtol": 2e-2,
    "profiles": {
        "full": {"batch_size": 8, "seq_len": 1024, "hidden_size": 4096},
        "small": {"batch_size": 2, "seq_len": 25, "hidden_size": 48},
    },
}

batch_size = 8
seq_len = 1024
hidden_size = 4096


class Model(nn.Module):
    """fc1 -> GELU(tanh) -> fc2, all float16 with biases."""

    def __init__(self, hidden_size: int):
        super().__init__()
        self.fc1 = nn.Linear(hidden_size, 4 * hidden_size, dtype=torch.float16)
        self.act = nn.GELU(approximate="tanh")
        self.fc2 = nn.Linear(4 * hidden_size, hidden_size, dtype=torch.float16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.fc1(x)))


def get_inputs():
    return [2.0 * torch.randn(batch_size, seq_len, hidden_size, dtype=torch.float16)]


def get_init_inputs():
    return [hidden_size]
