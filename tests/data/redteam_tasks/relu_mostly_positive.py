import torch
import torch.nn as nn

TASK = {
    "level": 1,
    "category": "activation",
    "description": "ReLU of mostly positive inputs (long positive runs, a negative in every 100 values).",
    "dtype": "float32",
    "atol": 1e-5,
    "rtol": 1e-5,
    "profiles": {"full": {"rows": 64, "cols": 4096}, "small": {"rows": 8, "cols": 1000}},
}

rows = 64
cols = 4096


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


def get_inputs():
    x = torch.rand(rows, cols) + 0.5
    x[:, ::100] = -1.0
    return [x]


def get_init_inputs():
    return []
