# ruff: noqa
# expected: forbidden
# expected_on_cuda: forbidden|runtime_error
# task: core/L1/sum_dim
# A PyTorch reduction that raises after doing its work: index_add_ with one extra index out of
# range adds every real slice, then raises; a context manager swallows the error and a kernel copies
# the sums. The operator was never counted because it raised. Refused: an operator error that
# forward survives (and the operator is counted).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


class Swallow:
    def __enter__(self):
        return self

    def __exit__(self, kind, value, trace):
        return True


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        d = self.dim % x.dim()
        n = x.shape[d]
        shape = list(x.shape)
        shape[d] = 1
        acc = torch.zeros(shape, dtype=x.dtype)
        padded = torch.cat([x, torch.zeros(shape, dtype=x.dtype)], dim=d)
        index = torch.zeros(n + 1, dtype=torch.int64)
        index[n:] = 1 << 40  # out of range: raised after the real slices were added
        with Swallow():
            acc.index_add_(d, index, padded)
        out = torch.empty(shape, dtype=x.dtype)
        copy_kernel[(triton.cdiv(acc.numel(), 256),)](acc, out, acc.numel(), BLOCK=256)
        return out
