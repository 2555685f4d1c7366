import torch
import torch.nn as nn

TASK = {
    "level": 1,
    "category": "other",
    "description": "A transpose behind trivial arithmetic: x.transpose(1, 2) * 1.0, materialised.",
    "dtype": "float32",
    "atol": 0.0,
    "rtol": 0.0,
    "profiles": {"full": {"batch": 8, "rows": 1024, "cols": 1024}, "small": {"batch": 3, "rows": 100, "cols": 70}},
}

batch = 8
rows = 1024
cols = 1024


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.transpose(1, 2) * 1.0


def get_inputs():
    return [torch.randn(batch, rows, cols)]


def get_init_inputs():
    return []
