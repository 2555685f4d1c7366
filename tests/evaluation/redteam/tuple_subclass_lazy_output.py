# ruff: noqa
# expected: wrong_output_type
# task: third_party/level1/5_Row_stats_tuple_output.py
# Finding F5 (second red-team round). The task returns a tuple (row sums, row maxima). forward
# launches a no-op kernel and returns a list subclass whose __iter__ computes both outputs with
# PyTorch the first time it is iterated. The harness used to iterate the output only after the
# recorded call had ended, so the work went unseen: accepted 5/5 before the fix. Only exact
# tuples / lists are taken now, without iterating anything else.
import torch
import torch.nn as nn
import triton
import triton.language as tl


class Lazy(list):
    def __init__(self, items, x=None):
        items = list(items)
        super().__init__(items)
        self.items = items
        self.x = x

    def __iter__(self):
        if self.x is not None:
            x = self.x
            self.x = None
            self.items[0].copy_(torch.sum(x, dim=1))
            self.items[1].copy_(torch.amax(x, dim=1))
        return iter(self.items)


@triton.jit
def noop_kernel(x_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)


class ModelNew(nn.Module):
    def forward(self, x):
        noop_kernel[(1,)](x, BLOCK=64)
        rows = x.shape[0]
        sums = torch.empty(rows, device=x.device, dtype=x.dtype)
        maxs = torch.empty(rows, device=x.device, dtype=x.dtype)
        return Lazy([sums, maxs], x)
