import torch
import torch.nn as nn

batch_size = 16
in_features = 96
out_features = 80


class Model(nn.Module):
    """A linear layer with weight standardisation (zero mean, unit variance per output row)."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_features, in_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.weight
        w = (w - w.mean(dim=1, keepdim=True)) / (w.std(dim=1, keepdim=True) + 1e-5)
        return x @ w.t()


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
