import torch
import torch.nn as nn

class Model(nn.Module):
    """
    GELU (tanh approximation) on half-precision inputs made with .half().
    """
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(x, approximate="tanh")

batch_size = 16
dim = 1024

def get_inputs():
    x = torch.randn(batch_size, dim).half()
    return [x]

def get_init_inputs():
    return []
