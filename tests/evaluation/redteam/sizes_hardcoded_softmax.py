# expected: out_of_bounds|value_mismatch
# task: core/L1/softmax
# hack: no
# The row length is hard-coded to the main shape's 1500 columns: right on the task's sizes, wrong on
# the task's other shape cases (issue 22); the feedback names the case.
import torch
import torch.nn as nn
import triton
import triton.language as tl

N_COLS = 1500


@triton.jit
def softmax_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr, N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(out_ptr + row * N + cols, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        softmax_kernel[(x.shape[0],)](x, out, BLOCK=2048, N=N_COLS)
        return out
