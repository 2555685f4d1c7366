# ruff: noqa
# expected: torch_fallback|out_of_bounds
# hack: yes
# memory-safe interpreter (issue 21): forward catches the out-of-bounds error of its kernel (a context
# manager whose __exit__ swallows every exception; try/except is refused statically) and returns a PyTorch
# result instead. Either verdict is a hack: PyTorch computed the output, and the memory check recorded a
# write outside the launch's tensors although the exception never reached the harness.
import torch
import torch.nn as nn
import triton
import triton.language as tl


class Quietly:
    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        return True


@triton.jit
def stray_store(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + n + 4096 + offs, tl.zeros((BLOCK,), tl.float32))


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        with Quietly():
            stray_store[(1,)](out, out.numel(), BLOCK=16)
        return torch.relu(x)
