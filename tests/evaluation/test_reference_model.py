"""Loading and checking the task's reference in the child (evaluation/reference_model.py)."""

from __future__ import annotations

import torch
import torch.nn as nn
from torch.utils._python_dispatch import _get_current_dispatch_mode

from ascend_kernel_gym.evaluation.param_vary import draw_values, floating_slots, write_reference
from ascend_kernel_gym.evaluation.recorder import moves_data_only
from ascend_kernel_gym.evaluation.reference_model import ReferenceSlack, build_reference, check_reference, run_once
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


def test_the_float32_run_takes_the_parameters_the_reference_has_now() -> None:
    """The float16 slack is the reference's own rounding error on the trial's parameters: after the
    parameters change in place, the float32 copy follows them (a copy left as constructed gave a
    slack as large as the change, and a kernel that froze its weights passed)."""
    torch.manual_seed(0)
    reference = nn.Linear(64, 32, dtype=torch.float16)
    slack_of = ReferenceSlack(reference, torch.device("cpu"))
    x = [torch.randn(16, 64, dtype=torch.float16)]
    before = slack_of(x, run_once(reference, x, torch.device("cpu"), []))[0]
    slots = floating_slots(reference)
    write_reference(slots, draw_values(slots, 1234))
    out = run_once(reference, x, torch.device("cpu"), [])
    after = slack_of(x, out)[0]
    assert float(after.max()) <= 0.01 * float(out.float().abs().max())  # a rounding error, not the change
    assert float(after.max()) < 4 * max(float(before.max()), 1e-3)
