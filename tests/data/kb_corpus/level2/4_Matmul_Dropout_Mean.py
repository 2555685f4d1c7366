import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    """Linear, dropout (p=0, eval-safe), mean, softmax."""

    def __init__(self, in_features, out_features, dropout_p):
        super().__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, x):
        return torch.softmax(torch.mean(self.dropout(self.matmul(x)), dim=1, keepdim=True), dim=1)


batch_size = 128
in_features = 16384
out_features = 16384
dropout_p = 0.0


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, dropout_p]
