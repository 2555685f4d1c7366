import torch
import torch.nn as nn
import torch.nn.functional as F

class DenseLayer(nn.Module):
    def __init__(self, in_features, growth_rate):
        super().__init__()
        self.bn = nn.BatchNorm2d(in_features)
        self.conv = nn.Conv2d(in_features, growth_rate, kernel_size=3, padding=1, bias=False)

    def forward(self, x):
        return self.conv(torch.relu(self.bn(x)))


class Model(nn.Module):
    """A DenseNet dense block: each layer sees all earlier feature maps."""

    def __init__(self, num_layers, num_input_features, growth_rate):
        super().__init__()
        self.layers = nn.ModuleList(
            [DenseLayer(num_input_features + i * growth_rate, growth_rate) for i in range(num_layers)]
        )

    def forward(self, x):
        features = [x]
        for layer in self.layers:
            features.append(layer(torch.cat(features, 1)))
        return torch.cat(features, 1)


batch_size = 10
num_layers = 6
num_input_features = 32
growth_rate = 32
height, width = 224, 224


def get_inputs():
    return [torch.randn(batch_size, num_input_features, height, width)]


def get_init_inputs():
    return [num_layers, num_input_features, growth_rate]
