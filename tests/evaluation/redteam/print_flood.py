# ruff: noqa
# expected: none
# max_output_tail: 17000
# A correct kernel that prints about 20 MB per call: the result must still arrive and the kept
# output is capped.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)


def launch_relu(x, out):
    n = x.numel()
    relu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)

_LINE = "spam " * 2000 + "\n"


class ModelNew(nn.Module):
    def forward(self, x):
        for _ in range(2000):
            print(_LINE, end="")
        out = torch.empty_like(x)
        launch_relu(x, out)
        return out
