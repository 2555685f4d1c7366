import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Layer normalisation over the last dimension; the normalised shape arrives as a tuple.
    """
    def __init__(self, normalized_shape: tuple, eps: float = 1e-5):
        super(Model, self).__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape, eps=eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x)

batch_size = 4
seq = 6
features = 64

def get_inputs():
    x = torch.randn(batch_size, seq, features)
    return [x]

def get_init_inputs():
    return [(features,), 1e-6]
