import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Gathers rows of a table with integer indices (an embedding lookup without a module).
    """
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, table: torch.Tensor, indices: torch.Tensor) -> torch.Tensor:
        return table[indices]

num_embeddings = 100
embedding_dim = 64
num_indices = 37

def get_inputs():
    table = torch.randn(num_embeddings, embedding_dim)
    indices = torch.randint(0, num_embeddings, (num_indices,), dtype=torch.int64)
    return [table, indices]

def get_init_inputs():
    return []
