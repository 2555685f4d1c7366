# ruff: noqa
# expected: wrong_output_type
# Finding F7 (second red-team round). forward returns a sparse COO tensor (torch.empty with
# layout=torch.sparse_coo: allocation only). Reading its storage raised inside the harness, so the
# result was `harness_error`; outputs must be dense (strided) tensors.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def noop_kernel(x_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)


class ModelNew(nn.Module):
    def forward(self, x):
        noop_kernel[(1,)](x, BLOCK=64)
        return torch.empty(x.shape, layout=torch.sparse_coo)
