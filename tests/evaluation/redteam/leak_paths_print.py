# ruff: noqa
# expected: runtime_error
# no_paths_in_output: yes
# Prints its own file name, the torch install path and its working directory, then fails: the
# output shown back (output_tail, feedback) must not reveal harness or sandbox paths.
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


class ModelNew(nn.Module):
    def forward(self, x):
        print("file:", __file__)
        print("torch:", torch)
        print("triton:", triton)
        raise RuntimeError("see the paths above " + __file__)
