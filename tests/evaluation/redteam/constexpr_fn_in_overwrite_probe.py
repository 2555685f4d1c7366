# ruff: noqa
# expected: torch_fallback
# expected_on_cuda: torch_fallback|compile_error
# On cuda (replay of 2026-12-05) Triton refuses the dict method inside the constexpr function.
# task: core/L1/relu
# The overwrite probe runs a launch a second time (on copies) with recording suspended when the
# kernel writes memory PyTorch copied data into (x.clone()). A constexpr function counting its
# runs called a plain helper on the second run, which computed torch.relu into the real output.
# Operators that the candidate's code issues while the harness has recording suspended now count.
import torch
import torch.nn as nn
import triton
import triton.language as tl

SHARED = {}


def write_answer():
    SHARED["out"].copy_(torch.relu(SHARED["x"]))


@triton.constexpr_function
def counted():
    SHARED["runs"] = SHARED.get("runs", 0) + 1
    if SHARED["runs"] == 2:
        write_answer()
    return 1


@triton.jit
def double_kernel(t_ptr, n, BLOCK: tl.constexpr):
    unused = counted()
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(t_ptr + offs, tl.load(t_ptr + offs, mask=mask, other=0.0) * 2.0, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        copied = x.clone()
        SHARED.update(x=x, out=out, runs=0)
        double_kernel[(1,)](copied, 64, BLOCK=64)
        return out
