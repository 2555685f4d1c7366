"""Swish activation: x * sigmoid(beta * x) with beta fixed at construction.

Written by a third party; the description of the problem lives in this module docstring.
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, beta: float = 1.0):
        super().__init__()
        self.beta = beta

    def forward(self, x):
        return x * torch.sigmoid(self.beta * x)


batch_size = 12
dim = 250


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [1.5]
