import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    """A bidirectional GRU; the hidden state is an input."""

    def __init__(self, input_size, hidden_size, num_layers=3):
        super().__init__()
        self.gru = nn.GRU(input_size, hidden_size, num_layers, bidirectional=True)

    def forward(self, x, h0):
        out, _ = self.gru(x, h0)
        return out


batch_size = 10
seq_len = 512
input_size = 128
hidden_size = 256
num_layers = 6


def get_inputs():
    return [torch.randn(seq_len, batch_size, input_size), torch.randn(num_layers * 2, batch_size, hidden_size)]


def get_init_inputs():
    return [input_size, hidden_size, num_layers]
