import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that applies a ReLU. The inputs are created on the GPU, as many
    KernelBench files written for CUDA do.
    """
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): Input tensor of any shape.

        Returns:
            torch.Tensor: ReLU of x, same shape.
        """
        return torch.relu(x)

batch_size = 8
dim = 500

def get_inputs():
    x = torch.randn(batch_size, dim).cuda()
    return [x]

def get_init_inputs():
    return []  # no init inputs
