# ruff: noqa
# expected: forbidden
# a module written as an *attribute* inside a container (`[torch.nn.functional][0]`) is not
# resolved by the static stage, so private / forbidden paths behind it are unchecked: reach
# torch.utils._python_dispatch._disable_current_modes() and run torch.relu with the recorder's dispatch mode popped.
import torch
import torch.nn as nn
import triton
import triton.language as tl

T = [torch.nn.functional][0].torch  # the torch module, invisible to the resolver


@triton.jit
def noop_kernel(x_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        noop_kernel[(1,)](x, BLOCK=64)
        with T.utils._python_dispatch._disable_current_modes():
            out = torch.relu(x)
        return out
