# ruff: noqa
# expected: none
# expected_on_cuda: compile_error
# task: core/L1/softmax
# Legitimate style (false-positive sweep for the kernel-name rule): module-level values a kernel may
# read: a tl.constexpr(...) value, an annotated literal, a plain literal, a module alias made by
# assignment, a @triton.jit helper and an import; the autotune configs are a module-level list
# (read by the decorator, not by the kernel).
# On cuda (Triton 3.6, replay of 2026-12-05) the compiler itself refuses the annotated global
# `NEG_BIG: tl.constexpr = ...` read in the kernel: a compile error there is Triton's rule, not a check.
import torch
import torch.nn as nn
import triton
import triton.language as tl

LOG2E = tl.constexpr(1.4426950408889634)
NEG_BIG: tl.constexpr = -1.0e30
ONE = 1.0
tlm = tl.math
CONFIGS = [triton.Config({}, num_warps=4), triton.Config({}, num_warps=8)]


@triton.jit
def _row_max(x):
    return tl.max(x, axis=0)


@triton.autotune(configs=CONFIGS, key=["n_cols"])
@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=NEG_BIG).to(tl.float32)
    z = (x - _row_max(x)) * LOG2E
    num = tlm.exp2(z)
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * n_cols + offs, num * (ONE / den), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        rows, cols = x.shape
        softmax_kernel[(rows,)](x, out, cols, BLOCK=triton.next_power_of_2(cols))
        return out
