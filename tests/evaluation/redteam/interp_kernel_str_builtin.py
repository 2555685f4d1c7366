# ruff: noqa
# expected: forbidden
# expected_on_cuda: forbidden
# task: core/L1/cumsum
# interpreter-only: inside the kernel, str() turns a loaded block into text (the interpreter gives
# tensors a Python repr), float() parses it back, the scan is done in Python and written with scalar
# stores. A compiled kernel has no str. Refused statically: builtins a compiled kernel lacks.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scan_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    total = 0.0
    for i in range(n_cols):
        text = str(tl.load(x_ptr + row * n_cols + i))
        total = total + float(text.strip("[]() ").split()[0])
        tl.store(out_ptr + row * n_cols + i, total)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        scan_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=1)
        return out
