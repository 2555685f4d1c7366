import torch
import torch.nn as nn

TASK = {
    "level": 1,
    "category": "gather",
    "description": "Embedding lookup: gather rows of an nn.Embedding(num_embeddings, dim) float32 table with "
    "int64 token ids (B, L): output (B, L, dim).",
    "dtype": "float32",
    "atol": 0.0,
    "rtol": 0.0,
    "profiles": {
        "full": {"num_embeddings": 32000, "embedding_dim": 4096, "batch_size": 8, "seq_len": 2048},
        "small": {"num_embeddings": 1000, "embedding_dim": 96, "batch_size": 4, "seq_len": 33},
    },
}

num_embeddings = 32000
embedding_dim = 4096
batch_size = 8
seq_len = 2048


class Model(nn.Module):
    """A token-embedding table lookup."""

    def __init__(self, num_embeddings: int, embedding_dim: int):
        super().__init__()
        self.embedding = nn.Embedding(num_embeddings, embedding_dim)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.embedding(ids)


def get_inputs():
    return [torch.randint(0, num_embeddings, (batch_size, seq_len), dtype=torch.int64)]


def get_init_inputs():
    return [num_embeddings, embedding_dim]
