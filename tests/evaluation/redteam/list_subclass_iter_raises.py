# ruff: noqa
# expected: wrong_output_type
# Finding F7 (second red-team round). forward returns a list subclass whose __iter__ raises. The
# harness used to iterate the output outside any handler, so the candidate's own failure came
# back as `harness_error` ("an evaluator problem, not your kernel's"; not cached, inconclusive
# for leaderboard verification). The subclass is now refused before anything iterates it.
import torch
import torch.nn as nn
import triton
import triton.language as tl


class Boom(list):
    def __iter__(self):
        raise ValueError("candidate-controlled failure")

    def __len__(self):
        raise ValueError("candidate-controlled failure")


@triton.jit
def noop_kernel(x_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)


class ModelNew(nn.Module):
    def forward(self, x):
        noop_kernel[(1,)](x, BLOCK=64)
        return Boom()
