import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    """Multi-layer perceptron whose hidden sizes are a list."""

    def __init__(self, input_size, layer_sizes, output_size):
        super().__init__()
        layers = []
        current = input_size
        for size in layer_sizes:
            layers.append(nn.Linear(current, size))
            layers.append(nn.ReLU())
            current = size
        layers.append(nn.Linear(current, output_size))
        self.network = nn.Sequential(*layers)

    def forward(self, x):
        return self.network(x)


batch_size = 128
input_size = 16384
layer_sizes = [32768, 32768]
output_size = 8192


def get_inputs():
    return [torch.randn(batch_size, input_size)]


def get_init_inputs():
    return [input_size, layer_sizes, output_size]
