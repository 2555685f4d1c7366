"""Legitimate ways of finishing a forward that the anti-cheat rules must not reject."""

from __future__ import annotations

import pytest

from ascend_kernel_gym.evaluation import ErrorType, EvalRequest

HEADER = """
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


def relu_into(x, out):
    relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
"""

FORWARDS = {
    "cat_of_kernel_outputs": """
class ModelNew(nn.Module):
    def forward(self, x):
        top, bottom = x[: x.shape[0] // 2].contiguous(), x[x.shape[0] // 2 :].contiguous()
        a, b = torch.empty_like(top), torch.empty_like(bottom)
        relu_into(top, a)
        relu_into(bottom, b)
        return torch.cat([a, b], dim=0)
""",
    "clone_of_kernel_output": """
class ModelNew(nn.Module):
    def forward(self, x):
        tmp = torch.empty_like(x)
        relu_into(x, tmp)
        return tmp.clone()
""",
    "zero_init_then_kernel": """
class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.zeros_like(x)
        out.zero_()
        relu_into(x, out)
        return out
""",
    "clone_then_kernel_overwrites_all": """
class ModelNew(nn.Module):
    def forward(self, x):
        out = x.clone()  # issue 22: a lazy allocation; the kernel overwrites every element
        relu_into(x, out)
        return out
""",
    "view_of_kernel_output": """
class ModelNew(nn.Module):
    def forward(self, x):
        flat = torch.empty(x.numel(), device=x.device, dtype=x.dtype)
        relu_into(x, flat)
        return flat.view(x.shape)
""",
}


@pytest.mark.parametrize("name", sorted(FORWARDS))
def test_legitimate_pattern_passes(name: str, evaluator, relu_task) -> None:
    result = evaluator.evaluate(EvalRequest(task=relu_task, code=HEADER + FORWARDS[name], seed=2))
    assert result.error_type == ErrorType.NONE, f"{name}: {result.error_type.value}: {result.error_message}"
    assert result.ok
