import torch
import torch.nn as nn
import torch.nn.functional as F

TASK = {
    "level": 2,
    "category": "loss",
    "description": (
        "Mean cross-entropy loss of float32 logits [tokens, vocab] against int64 class targets: "
        "a row-wise log-sum-exp, a gather of the target logit and a mean over rows (a scalar)."
    ),
    "dtype": "float32",
    "atol": 1e-4,
    "rtol": 1e-4,
    "profiles": {
        "full": {"num_tokens": 4096, "vocab_size": 32000},
        "small": {"num_tokens": 37, "vocab_size": 500},
    },
}

num_tokens = 4096
vocab_size = 32000


class Model(nn.Module):
    """F.cross_entropy(logits, targets) with the default mean reduction."""

    def __init__(self):
        super().__init__()

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits, targets)


def get_inputs():
    logits = 3.0 * torch.randn(num_tokens, vocab_size)
    targets = torch.randint(0, vocab_size, (num_tokens,), dtype=torch.int64)
    return [logits, targets]


def get_init_inputs():
    return []
