"""No false positives: every bundled reference solution passes the evaluator on the interpreter."""

from __future__ import annotations

import pytest

from ascend_kernel_gym.evaluation import ErrorType, EvalRequest
from ascend_kernel_gym.tasks import load_suite

TASKS = load_suite("core")


@pytest.fixture(scope="module")
def solution_results(evaluator):
    with_solution = [t for t in TASKS if t.solution_path is not None]
    requests = [EvalRequest(task=t, code=t.solution_source() or "", seed=7) for t in with_solution]
    return {t.id: r for t, r in zip(with_solution, evaluator.evaluate_many(requests))}


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS, ids=[t.id for t in TASKS])
def test_reference_solution_passes(task, solution_results) -> None:
    if task.solution_path is None:
        pytest.skip(f"{task.id} has no bundled solution yet")
    result = solution_results[task.id]
    assert result.error_type == ErrorType.NONE, f"{task.id}: {result.error_type.value}: {result.error_message}"
    assert result.ok and result.correct and not result.hack
    assert result.trials_passed == result.trials_total == 5
    assert result.launches, "a passing solution has launch records"
    assert result.speedup is None  # the interpreter never reports a speedup
