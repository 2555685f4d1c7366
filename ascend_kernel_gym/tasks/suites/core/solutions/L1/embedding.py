import torch
import torch.nn as nn
import triton
import triton.language as tl

MAX_PROGRAMS = 4096


@triton.jit
def embedding_kernel(ids_ptr, table_ptr, out_ptr, n_tokens, dim, BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr):
    pid = tl.program_id(0)
    for block in range(pid, tl.cdiv(n_tokens, BLOCK_T), tl.num_programs(0)):
        tokens = block * BLOCK_T + tl.arange(0, BLOCK_T)
        token_mask = tokens < n_tokens
        ids = tl.load(ids_ptr + tokens, mask=token_mask, other=0).to(tl.int64)
        src_rows = table_ptr + ids[:, None] * dim
        dst_rows = out_ptr + tokens[:, None].to(tl.int64) * dim
        for d0 in range(0, dim, BLOCK_D):
            cols = d0 + tl.arange(0, BLOCK_D)
            mask = token_mask[:, None] & (cols[None, :] < dim)
            rows = tl.load(src_rows + cols[None, :], mask=mask, other=0.0)
            tl.store(dst_rows + cols[None, :], rows, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_embeddings: int, embedding_dim: int):
        super().__init__()
        self.embedding = nn.Embedding(num_embeddings, embedding_dim)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        ids = ids.contiguous()
        table = self.embedding.weight.contiguous()
        dim = table.shape[1]
        n_tokens = ids.numel()
        out = torch.empty((*ids.shape, dim), dtype=table.dtype, device=table.device)
        BLOCK_T = 16
        BLOCK_D = min(triton.next_power_of_2(dim), 256)
        grid = (max(1, min(triton.cdiv(n_tokens, BLOCK_T), MAX_PROGRAMS)),)
        embedding_kernel[grid](ids, table, out, n_tokens, dim, BLOCK_T=BLOCK_T, BLOCK_D=BLOCK_D)
        return out
