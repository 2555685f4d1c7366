"""Settings precedence between an EvalRequest and its Evaluator (evaluation/evaluator.py)."""

from __future__ import annotations

import pytest

from ascend_kernel_gym.evaluation import EvalRequest, EvalResult, Evaluator
from ascend_kernel_gym.evaluation.cache import ResultCache


@pytest.fixture
def trials_seen(relu_task):
    """An evaluator with ``num_trials=3`` whose jobs only record their trial count (no worker runs)."""
    ev = Evaluator(backend="interpreter", workers=1, start=False, cache=False, num_trials=3)
    seen: list[int] = []

    def fake_run_job(job, timeout, base):
        seen.append(job.num_trials)
        result = EvalResult.from_dict(base.to_dict())
        result.correct, result.trials_total = True, job.num_trials
        return result

    ev._run_job = fake_run_job
    try:
        yield ev, seen
    finally:
        ev.close()


def test_a_request_that_gives_num_trials_always_gets_it(trials_seen, relu_task, relu_solution) -> None:
    ev, seen = trials_seen
    # 5 is the old dataclass default: it used to be taken for "the evaluator's default" and became 3.
    assert ev.evaluate(EvalRequest(task=relu_task, code=relu_solution, num_trials=5)).trials_total == 5
    assert ev.evaluate(EvalRequest(task=relu_task, code=relu_solution, num_trials=1)).trials_total == 1
    assert seen == [5, 1]


def test_a_request_without_num_trials_gets_the_evaluators(trials_seen, relu_task, relu_solution) -> None:
    ev, seen = trials_seen
    assert EvalRequest(task=relu_task, code=relu_solution).num_trials is None
    assert ev.evaluate(EvalRequest(task=relu_task, code=relu_solution)).trials_total == 3
    assert ev.evaluate(EvalRequest(task=relu_task, code=relu_solution, num_trials=None)).trials_total == 3
    assert seen == [3, 3]


def test_the_cache_key_follows_the_trials_that_run(trials_seen, relu_task, relu_solution) -> None:
    ev, seen = trials_seen
    ev.cache = ResultCache()
    default = ev.evaluate(EvalRequest(task=relu_task, code=relu_solution))
    assert not default.cache_hit and seen == [3]
    assert ev.evaluate(EvalRequest(task=relu_task, code=relu_solution, num_trials=3)).cache_hit  # the same 3 trials
    five = ev.evaluate(EvalRequest(task=relu_task, code=relu_solution, num_trials=5))
    assert not five.cache_hit and five.trials_total == 5 and seen == [3, 5]
    assert ev.evaluate(EvalRequest(task=relu_task, code=relu_solution, num_trials=5)).cache_hit
    assert seen == [3, 5]


def test_num_trials_must_be_a_positive_int_or_none(relu_task) -> None:
    ev = Evaluator(backend="interpreter", workers=1, start=False)
    try:
        for bad in (0, -1, 2.5, "3"):
            with pytest.raises(ValueError, match="num_trials"):
                ev.evaluate(EvalRequest(task=relu_task, code="x", num_trials=bad))  # type: ignore[arg-type]
    finally:
        ev.close()
