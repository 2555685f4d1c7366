"""Hook points for the Ascend checks inside the child: warn adds findings, enforce fails the kernel."""

from __future__ import annotations

import pytest

from ascend_kernel_gym.evaluation import ErrorType, EvalRequest, Evaluator, render_feedback

pytest.importorskip("ascend_kernel_gym.ascend.checks")

BREAK = "        if block > 1_000_000_000:\n            break\n"


@pytest.mark.slow
def test_ascend_checks_warn_and_enforce(evaluator, relu_task, relu_solution) -> None:
    code = relu_solution.replace(
        "        mask = offsets < n_elements\n", BREAK + "        mask = offsets < n_elements\n"
    )
    assert code != relu_solution, "the reference solution changed shape; update this test"
    warned = evaluator.evaluate(EvalRequest(task=relu_task, code=code))  # the session pool runs in warn mode
    assert warned.ok, warned.error_message
    rules = {finding["rule"] for finding in warned.ascend_checks}
    assert "break_continue" in rules
    assert any("break_continue" in w for w in warned.warnings)
    assert "break_continue" in render_feedback(warned)
    with Evaluator(backend="interpreter", workers=1, cache=False, ascend_checks="enforce") as strict:
        enforced = strict.evaluate(EvalRequest(task=relu_task, code=code))
        clean = strict.evaluate(EvalRequest(task=relu_task, code=relu_solution))
    assert enforced.error_type == ErrorType.ASCEND_CONSTRAINT and not enforced.correct
    assert "break" in enforced.error_message
    assert clean.ok, clean.error_message
