# ruff: noqa
# expected: forbidden
# expected_on_cuda: forbidden
# task: core/L1/relu
# interpreter-only: one kernel appends the values it loads to a module-level list, Python computes
# relu in plain Python, a second kernel reads the answers from another module-level list and stores
# them. No arithmetic in any kernel, no PyTorch operator. A compiled kernel cannot read such
# globals. Refused statically: a kernel reads a module-level name that is not a constexpr or literal.
import torch
import torch.nn as nn
import triton
import triton.language as tl

SEEN = []
ANSWER = []


@triton.jit
def read_kernel(x_ptr, n):
    for i in range(n):
        SEEN.append(int(tl.load(x_ptr + i) * 1048576.0))  # fixed point: int() of a tensor works in a kernel there


@triton.jit
def write_kernel(out_ptr, n):
    for i in range(n):
        tl.store(out_ptr + i, ANSWER[i])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        n = x.numel()
        SEEN.clear()
        ANSWER.clear()
        read_kernel[(1,)](x, n)
        ANSWER.extend(max(v / 1048576.0, 0.0) for v in SEEN)
        out = torch.empty_like(x)
        write_kernel[(1,)](out, n)
        return out
