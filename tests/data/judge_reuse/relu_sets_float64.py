import torch
import torch.nn as nn

batch_size = 16
dim = 1000


class Model(nn.Module):
    """ReLU whose construction switches torch's default dtype to float64 for the whole process: a
    judging reference child that serves the next evaluation must not carry that over."""

    def __init__(self):
        super().__init__()
        torch.set_default_dtype(torch.float64)
        torch.backends.cuda.matmul.allow_tf32 = True

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
