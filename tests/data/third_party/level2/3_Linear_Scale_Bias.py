import torch
import torch.nn as nn

class Model(nn.Module):
    """
    A linear layer whose output is scaled by a constant and shifted by a learned bias.
    """
    def __init__(self, in_features, out_features, scaling_factor, bias_shape):
        super(Model, self).__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scaling_factor = scaling_factor
        self.bias = nn.Parameter(torch.randn(bias_shape) * 0.02)

    def forward(self, x):
        """
        Args:
            x: (batch_size, in_features)
        Returns:
            (batch_size, out_features)
        """
        x = self.linear(x)
        x = x * self.scaling_factor
        x = x + self.bias
        return x

batch_size = 16
in_features = 32
out_features = 48
scaling_factor = 0.5
bias_shape = (out_features,)

def get_inputs():
    return [torch.randn(batch_size, in_features)]

def get_init_inputs():
    return [in_features, out_features, scaling_factor, bias_shape]
