"""The Ascend stage: Ascend rule findings and the cost model's estimate (after correctness passed).

Both parts live in :mod:`ascend_kernel_gym.ascend` and are optional: without them the stage does
nothing. Its time is kept apart (``stage_durations["ascend_hooks"]``): it is not the candidate's.

Imports torch: only the zygote and its children import this module.
"""

from __future__ import annotations

import json
import random
from typing import Any

import torch

from ascend_kernel_gym.evaluation.compare import outputs_close
from ascend_kernel_gym.evaluation.correctness import call_candidate, reference_slack, run_reference
from ascend_kernel_gym.evaluation.errors import StageError
from ascend_kernel_gym.evaluation.inputs import clone_inputs, make_inputs
from ascend_kernel_gym.evaluation.placement import min_bytes
from ascend_kernel_gym.evaluation.result import ErrorType
from ascend_kernel_gym.evaluation.state import ChildState


def run_ascend_hooks(
    state: ChildState, task_module: Any, reference: Any, candidate: Any, device: torch.device, rng: random.Random
) -> None:
    """Run the Ascend rule checks and, on the interpreter, the Ascend cost model (neither when off).

    Findings become warnings (``enforce``: errors fail with ``ascend_constraint``). The cost
    model counts one more checked call of the candidate (recorded, its output compared with the
    reference's), so a candidate cannot do less work on the counted call than on the others. A
    bug in either part becomes a warning, never the candidate's failure.
    """
    job, result = state.job, state.result
    if job.ascend_checks == "off":
        return
    try:
        from ascend_kernel_gym.ascend import checks as ascend_checks
    except ImportError:
        ascend_checks = None  # type: ignore[assignment]
    if ascend_checks is not None and hasattr(ascend_checks, "run_ascend_checks"):
        try:
            findings = ascend_checks.run_ascend_checks(
                job.code, list(state.recorder.launches) if state.recorder else [], job.ascend_profile
            )  # type: ignore[union-attr]
            result.ascend_checks = json.loads(json.dumps([dict(f) for f in findings], default=str))
        except Exception as exc:  # noqa: BLE001 - a bug in the checks must not fail the candidate
            result.warnings.append(f"Ascend checks could not run: {type(exc).__name__}: {str(exc)[:200]}")
        for finding in result.ascend_checks:
            result.warnings.append(f"ascend[{finding.get('rule')}] {finding.get('message')}")
        errors = [f for f in result.ascend_checks if f.get("severity") == "error"]
        if job.ascend_checks == "enforce" and errors:
            raise StageError(
                ErrorType.ASCEND_CONSTRAINT,
                "the kernel breaks Ascend constraints: " + "; ".join(str(f.get("message")) for f in errors[:5]),
            )
    if job.backend != "interpreter":
        return
    try:
        from ascend_kernel_gym.ascend import cost_model
    except ImportError:
        return
    if not (hasattr(cost_model, "instrument") and hasattr(cost_model, "estimate")):
        return
    try:
        inputs = make_inputs(task_module, rng.getrandbits(62), "task", device)
        # The counted call is a checked one (recorded, its output compared with the reference's):
        # a candidate cannot do less work on it than on the others.
        with cost_model.instrument() as counters:
            counted = call_candidate(state, candidate, clone_inputs(inputs), False).output
        out_r = run_reference(state, reference, clone_inputs(inputs))
        slack = reference_slack(state, reference, inputs, out_r)
        if not outputs_close(counted, out_r, job.task.atol, job.task.rtol, slack):
            raise StageError(
                ErrorType.VALUE_MISMATCH,
                "the output was wrong on the call the cost model counted (work skipped on some calls); compute the "
                "output from the inputs on every call",
            )
        roofline: dict[str, Any] | None
        if hasattr(cost_model, "task_roofline"):
            roofline = cost_model.task_roofline(reference, clone_inputs(inputs), job.task.id)
        else:
            roofline = {"min_bytes": min_bytes(inputs, [])}
        estimate = cost_model.estimate(counters, roofline, job.ascend_profile)
        result.estimate = json.loads(json.dumps(estimate, default=str))
    except StageError:
        raise
    except Exception as exc:  # noqa: BLE001 - a bug in the cost model must not fail the candidate
        result.warnings.append(f"cost model could not run: {type(exc).__name__}: {str(exc)[:200]}")
