"""Loading and checking the task's reference in the child (evaluation/reference_model.py)."""

from __future__ import annotations

import torch
import torch.nn as nn
from torch.utils._python_dispatch import _get_current_dispatch_mode

from ascend_kernel_gym.evaluation.recorder import moves_data_only
from ascend_kernel_gym.evaluation.reference_model import build_reference, check_reference
from ascend_kernel_gym.tasks import get_task
from ascend_kernel_gym.tasks.runtime import instantiate

CPU = torch.device("cpu")


def _ops(task_id: str) -> frozenset[str]:
    module = instantiate(get_task(task_id), "small")
    _, reference = build_reference(module, 3, CPU)
    return check_reference(module, reference, CPU, 5, 0.0, 0.0)


def test_the_check_names_the_operators_of_one_reference_call() -> None:
    """What the data-movement rule reads: a transpose only moves data, relu and attention compute."""
    transpose = _ops("core/L1/transpose")
    assert transpose >= {"aten.transpose", "aten.clone"} and moves_data_only(transpose)
    assert "aten.randn" not in transpose  # the inputs are drawn outside the recorded call
    assert not moves_data_only(_ops("core/L1/relu"))
    assert not moves_data_only(_ops("core/L2/attention"))


def test_a_reference_that_fails_under_the_recording_mode_still_runs_with_no_operators_named() -> None:
    """An operator that cannot pass through a Python dispatch mode must not make the task
    unevaluable: the call runs again without the mode, and the operators are unknown (no rule)."""

    class Picky(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if _get_current_dispatch_mode() is not None:
                raise RuntimeError("this operator has no Python dispatch")
            return x.transpose(0, 1).contiguous()

    module = instantiate(get_task("core/L1/transpose"), "small")
    assert check_reference(module, Picky(), CPU, 5, 0.0, 0.0) == frozenset()
