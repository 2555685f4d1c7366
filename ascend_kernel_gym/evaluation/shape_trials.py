"""Shape cases in the correctness trials: the same task at other sizes, models built for each.

The task says which shapes it has besides the profile's own (:meth:`.tasks.task.Task.shape_cases`:
declared ``TASK["cases"]``, ``get_input_groups()`` groups, or sizes derived from its constants,
an odd one first). The last trials of an evaluation run on them (:func:`.inputs.trial_schedule`).
Both children compute the same list from the task and the profile, so the plan names a case and
each child builds, for that case, the task module, the reference (from the evaluation's model seed)
and, in the candidate's child, a fresh ``ModelNew`` with the case's init arguments and the case
reference's parameters. A case whose reference cannot be built or run is dropped (the plan's notes
say so). On the interpreter each extra case is capped to :data:`CASE_BUDGET_ELEMS`.

Imports torch: only the zygote's children import this module.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from ascend_kernel_gym.evaluation.job import Job
from ascend_kernel_gym.evaluation.reference_model import build_reference
from ascend_kernel_gym.tasks.runtime import instantiate

#: elements (inputs and parameters) of one extra case, per backend (None: no cap)
CASE_BUDGET_ELEMS: dict[str, int | None] = {"interpreter": 1_000_000, "cuda": None, "npu": None}
#: extra cases an evaluation considers
MAX_EXTRA_CASES = 3


def extra_cases(job: Job, profile: str) -> list[Any]:
    """The task's shape cases other than the main one, in the task's order (the odd one first);
    none when the task cannot say (a problem of the task, reported by its main case if at all)."""
    try:
        cases = job.task.shape_cases(
            profile, budget_elems=CASE_BUDGET_ELEMS.get(job.backend), max_cases=MAX_EXTRA_CASES
        )
    except Exception:  # noqa: BLE001 - a task file the derivation cannot read: main shape only
        return []
    return [case for case in cases[1:] if case.name != "main"]


def case_text(case: Any) -> str:
    """``'odd' (batch_size=15, dim=999)``: how feedback names a case."""
    sizes = ", ".join(f"{k}={v}" for k, v in list(case.overrides.items())[:6] if isinstance(v, (int, float)))
    if case.group is not None:
        sizes = sizes or f"input group {case.group}"
    text = f"{case.name!r}" + (f" ({sizes})" if sizes else "")
    return text[:160]


@dataclass
class CaseModels:
    """One shape case's task module, init arguments and reference."""

    task_module: Any
    init_inputs: list[Any]
    reference: Any


def build_case(job: Job, profile: str, case: Any, init_seed: int, device: torch.device) -> CaseModels:
    """The case's task module and reference model, built as the main ones are (raises on failure)."""
    task_module = instantiate(job.task, profile, case)
    init_inputs, reference = build_reference(task_module, init_seed, device)
    return CaseModels(task_module, init_inputs, reference)
