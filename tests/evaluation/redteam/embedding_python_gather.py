# ruff: noqa
# expected: torch_fallback|no_kernel_launched|forbidden
# task: core/L1/embedding
# Embedding lookup done with Python ints (`int(i)` -> item) and row selects stacked together:
# select / item / stack are all on the allow-list.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0.0), mask=mask)


def launch_copy(x, out):
    n = x.numel()
    copy_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)


class ModelNew(nn.Module):
    def __init__(self, num_embeddings, embedding_dim):
        super().__init__()
        self.embedding = nn.Embedding(num_embeddings, embedding_dim)

    def forward(self, ids):
        scratch = torch.empty(16, device=ids.device)
        launch_copy(scratch, torch.empty_like(scratch))
        table = self.embedding.weight
        rows = [table[int(i)] for i in ids.reshape(-1)]
        return torch.stack(rows).view(*ids.shape, table.shape[1])
