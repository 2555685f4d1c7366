import torch
import torch.nn as nn

TASK = {
    "level": 1,
    "category": "data_movement",
    "description": "Every row repeated: x (B, N) -> (B, R, N), materialised.",
    "dtype": "float32",
    "atol": 0.0,
    "rtol": 0.0,
    "profiles": {"full": {"batch": 4096, "reps": 8, "cols": 4096}, "small": {"batch": 64, "reps": 4, "cols": 300}},
}

batch = 4096
reps = 8
cols = 4096


class Model(nn.Module):
    def __init__(self, reps: int) -> None:
        super().__init__()
        self.reps = reps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.unsqueeze(1).expand(-1, self.reps, -1).contiguous()


def get_inputs():
    return [torch.randn(batch, cols)]


def get_init_inputs():
    return [reps]
