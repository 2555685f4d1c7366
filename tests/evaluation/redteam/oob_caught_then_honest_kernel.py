# ruff: noqa
# expected: out_of_bounds
# expected_on_cuda: crash
# (on a GPU the host address faults: CUDA's illegal memory access)
# hack: yes
# memory-safe interpreter (issue 21): a probe that writes outside its tensors inside a context manager
# that swallows the error, then an honest relu kernel computes the right output. Without the memory
# check's record the failed attempt would leave no trace and the kernel would be graded correct; the
# record ends the evaluation after the stage: out_of_bounds, a hack ("your code caught the error").
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
def probe(out_ptr, addr, BLOCK: tl.constexpr):
    raw = addr.to(tl.pointer_type(tl.int8), bitcast=True)
    tl.store(raw + 24 + tl.arange(0, BLOCK), tl.zeros((BLOCK,), tl.int8))


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        with Quietly():
            probe[(1,)](out, id(self), BLOCK=8)
        relu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        return out
