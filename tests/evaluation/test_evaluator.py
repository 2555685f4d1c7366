"""Settings precedence between an EvalRequest and its Evaluator, pool size, the neighbour-OOM retry (evaluator.py)."""

from __future__ import annotations

import threading
import time

import pytest

from ascend_kernel_gym.evaluation import EvalRequest, EvalResult, Evaluator
from ascend_kernel_gym.evaluation.cache import ResultCache
from ascend_kernel_gym.evaluation.concurrency import was_retried
from ascend_kernel_gym.evaluation.memory_book import CONTEXT_BYTES, DEFAULT_RATIO, MIB, retry_need, task_bytes
from ascend_kernel_gym.evaluation.result import ErrorType, Stage


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


def test_workers_per_device_sets_the_pool_size_and_misuse_is_refused() -> None:
    ev = Evaluator(backend="interpreter", workers_per_device=3, start=False, cache=False)
    try:
        assert ev.workers == 3 and ev.workers_per_device == 3 and len(ev._handles) == 3
    finally:
        ev.close()
    with pytest.raises(ValueError, match="not both"):
        Evaluator(backend="interpreter", workers=2, workers_per_device=2, start=False)
    with pytest.raises(ValueError, match="workers_per_device"):
        Evaluator(backend="interpreter", workers_per_device=0, start=False)
    with pytest.raises(ValueError, match="executor"):
        Evaluator(backend="interpreter", executor="dask", start=False)
    with pytest.raises(ValueError, match="for executor='ray'"):
        Evaluator(backend="interpreter", address="auto", start=False)
    with pytest.raises(ValueError, match="not workers"):
        Evaluator(backend="interpreter", executor="ray", workers=2, start=False)


class FakeWorkerRuns:
    """Stands in for ``Evaluator._run_on``: the worker step only, with an out-of-memory on chosen runs.

    The first ``together`` runs meet at a barrier, so they hold the device at the same time.
    """

    def __init__(self, oom_codes: set[str], together: int) -> None:
        self.oom_codes = oom_codes
        self.barrier = threading.Barrier(together) if together > 1 else None
        self.calls: list[str] = []
        self.lock = threading.Lock()

    def __call__(self, handle, job, timeout, base):
        with self.lock:
            first = job.code not in self.calls
            self.calls.append(job.code)
        if self.barrier is not None and first:
            self.barrier.wait(30)
        result = EvalResult.from_dict(base.to_dict())
        if first and job.code in self.oom_codes:
            result.error_type = ErrorType.OOM
            result.error_message = "OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB"
        else:
            result.correct = True
        return result


def _two_worker_evaluator(runs: FakeWorkerRuns) -> Evaluator:
    ev = Evaluator(backend="interpreter", workers=2, start=False, cache=False)
    ev._run_on = runs
    return ev


def test_an_out_of_memory_next_to_a_neighbour_is_run_again_alone_and_marked(relu_task, relu_solution) -> None:
    victim, neighbour = relu_solution + "\n# victim\n", relu_solution + "\n# neighbour\n"
    runs = FakeWorkerRuns({victim}, together=2)
    ev = _two_worker_evaluator(runs)
    try:
        results = ev.evaluate_many([EvalRequest(task=relu_task, code=c) for c in (victim, neighbour)])
    finally:
        ev.close()
    assert [r.correct for r in results] == [True, True]
    assert was_retried(results[0]) and not was_retried(results[1])
    # the warning keeps what the first run said, so a user can tell a neighbour's doing from a retry's cost
    (warning,) = [w for w in results[0].warnings if w.startswith("retried:")]
    assert "first run: oom: OutOfMemoryError: CUDA out of memory" in warning and "waiting" in warning
    assert runs.calls.count(victim) == 2 and runs.calls.count(neighbour) == 1
    assert ev.stats["retries"] == 1
    # the retried result still says how long it waited and held its worker, both runs counted
    durations = results[0].stage_durations
    assert {"queued", "device_wait", "retry_wait", "worker"} <= durations.keys()
    assert durations["worker"] >= durations["retry_wait"] >= 0


def test_a_second_out_of_memory_next_to_a_neighbour_is_run_alone(relu_task, relu_solution) -> None:
    """The retry first shares the device (with room for twice what the failed run took); only a
    second out-of-memory next to a neighbour empties the device for it."""
    victim, neighbour = relu_solution + "\n# victim\n", relu_solution + "\n# neighbour\n"
    calls: list[str] = []
    asked_alone: list[bool] = []
    lock = threading.Lock()
    both = threading.Barrier(2)

    def runs(handle, job, timeout, base):
        with lock:
            calls.append(job.code)
            count = calls.count(job.code)
        result = EvalResult.from_dict(base.to_dict())
        if job.code == neighbour:
            both.wait(30)
            deadline = time.monotonic() + 30
            while calls.count(victim) < 2 and time.monotonic() < deadline:  # holds its slot meanwhile
                time.sleep(0.01)
            result.correct = True
            return result
        if count == 1:
            both.wait(30)
        if count <= 2:
            result.error_type = ErrorType.OOM
            result.error_message = "OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB"
        else:
            result.correct = True
        return result

    ev = Evaluator(backend="interpreter", workers=2, start=False, cache=False)
    ev._run_on = runs
    gate = ev._gates[0]
    slot = gate.slot

    def recording_slot(exclusive: bool = False, need: int | None = None):
        asked_alone.append(exclusive)
        return slot(exclusive=exclusive, need=need)

    gate.slot = recording_slot
    try:
        results = ev.evaluate_many([EvalRequest(task=relu_task, code=c) for c in (victim, neighbour)])
    finally:
        ev.close()
    assert [r.correct for r in results] == [True, True]
    assert calls.count(victim) == 3 and asked_alone.count(True) == 1 and asked_alone[-1] is True
    (warning,) = [w for w in results[0].warnings if w.startswith("retried:")]
    assert "run again alone on it" in warning and "it ran out of memory again: oom" in warning
    assert ev.stats["retries"] == 1


def test_a_retry_asks_for_twice_what_its_failed_run_took_within_the_room() -> None:
    gib = 2**30
    assert retry_need(None, 10 * gib, 66 * gib, 8) == 20 * gib
    assert retry_need(30 * gib, 10 * gib, 66 * gib, 8) == 30 * gib  # what it is expected to take, if more
    assert retry_need(None, None, 66 * gib, 8) == 66 * gib // 8  # at least an equal share
    assert retry_need(None, 50 * gib, 66 * gib, 8) == 66 * gib  # never more than the room
    assert retry_need(5 * gib, 5 * gib, None, 8) is None


def test_a_task_is_admitted_with_the_memory_its_last_evaluations_took(relu_task, relu_solution) -> None:
    ev = _two_worker_evaluator(FakeWorkerRuns(set(), together=1))
    asked: list[int | None] = []
    gate = ev._gates[0]
    slot = gate.slot

    def recording_slot(exclusive: bool = False, need: int | None = None):
        asked.append(need)
        return slot(exclusive=exclusive, need=need)

    def measured(handle, job, timeout, base):
        result = EvalResult.from_dict(base.to_dict())
        result.correct, result.stage = True, Stage.DONE
        result.device_memory_mb = {"candidate": 3000.0, "reference": 5000.0}
        return result

    gate.slot = recording_slot
    ev._run_on = measured
    try:
        first = ev.evaluate(EvalRequest(task=relu_task, code=relu_solution))
        ev.evaluate(EvalRequest(task=relu_task, code=relu_solution + "\n# another\n"))
    finally:
        ev.close()
    prior = int(task_bytes(relu_task, first.profile) * DEFAULT_RATIO) + 2 * CONTEXT_BYTES
    assert asked == [prior, 8000 * MIB + 2 * CONTEXT_BYTES]


def test_a_shared_device_job_may_keep_copies_in_what_its_judge_left_idle(relu_task, relu_solution, monkeypatch) -> None:
    import ascend_kernel_gym.evaluation.evaluator as evaluator_module

    ev = _two_worker_evaluator(FakeWorkerRuns(set(), together=1))
    jobs = []

    def measured(handle, job, timeout, base):
        jobs.append((job.device_share, job.keep_device_bytes))
        result = EvalResult.from_dict(base.to_dict())
        result.correct, result.stage = True, Stage.DONE
        result.device_memory_mb = {"candidate": 3000.0, "reference": 5000.0, "reference_judging": 1500.0}
        return result

    ev._run_on = measured
    try:
        ev.evaluate(EvalRequest(task=relu_task, code=relu_solution))
        ev.evaluate(EvalRequest(task=relu_task, code=relu_solution + "\n# another\n"))
        monkeypatch.setattr(evaluator_module, "device_share", lambda backend, workers: 0.5)  # a device, shared
        ev.evaluate(EvalRequest(task=relu_task, code=relu_solution + "\n# shared\n"))
    finally:
        ev.close()
    # the interpreter's "device" is the host, not shared: nothing kept there; shared: the judge's
    # peak of the task's last evaluations
    assert jobs == [(1.0, 0), (1.0, 0), (0.5, 1500 * MIB)]


def test_a_timing_budget_reaches_the_job_and_the_cache_key(relu_task, relu_solution) -> None:
    for bad in (0, -1.0, float("nan"), float("inf"), "2", True):
        with pytest.raises(ValueError, match="profile_budget_s"):
            Evaluator(backend="interpreter", profile_budget_s=bad, start=False)
    jobs = []

    def keep(handle, job, timeout, base):
        jobs.append(job)
        return EvalResult.from_dict(base.to_dict())

    budgeted = Evaluator(backend="interpreter", workers=1, start=False, cache=False)  # 2 s by default
    plain = Evaluator(backend="interpreter", workers=1, start=False, cache=False, profile_budget_s=None)
    budgeted._run_on = plain._run_on = keep
    request = EvalRequest(task=relu_task, code=relu_solution)
    try:
        budgeted.evaluate(request)
        plain.evaluate(request)
        assert [job.profile_budget_s for job in jobs] == [1.0, None]
        keys = [ev._cache_key(request, "full", "h", 5) for ev in (budgeted, plain)]
        assert keys[0] != keys[1]  # timed differently: never the same cache entry
    finally:
        budgeted.close()
        plain.close()


def test_an_out_of_memory_alone_on_the_device_is_the_candidates(relu_task, relu_solution) -> None:
    runs = FakeWorkerRuns({relu_solution}, together=1)
    ev = _two_worker_evaluator(runs)
    try:
        result = ev.evaluate(EvalRequest(task=relu_task, code=relu_solution))
    finally:
        ev.close()
    assert result.error_type == ErrorType.OOM and not was_retried(result)
    assert runs.calls == [relu_solution] and ev.stats["retries"] == 0


def test_results_timed_with_and_without_the_device_gate_never_share_a_cache_entry(
    monkeypatch, relu_task, relu_solution
) -> None:
    ev = Evaluator(backend="interpreter", workers=1, start=False)
    request = EvalRequest(task=relu_task, code=relu_solution)
    keys = {}
    for setting in ("1", "0"):
        monkeypatch.setenv("AKG_TIMING_GATE", setting)
        keys[setting] = ev._cache_key(request, "small", "hash", 3)
    assert keys["1"] != keys["0"]
    monkeypatch.setenv("AKG_TIMING_GATE", "1")
    assert ev._cache_key(request, "small", "hash", 3) == keys["1"]


BF16_NATIVE_SIGMOID = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sigmoid_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, x / (x + x), mask=mask)  # bf16 arithmetic, wrong on purpose on any backend


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        sigmoid_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        return out
"""


def test_a_wrong_bf16_result_on_the_interpreter_says_what_the_interpreter_gets_wrong(evaluator) -> None:
    from ascend_kernel_gym.evaluation.evaluator import BF16_INTERPRETER_NOTE
    from ascend_kernel_gym.tasks import get_task

    result = evaluator.evaluate(EvalRequest(task=get_task("core/L1/sigmoid"), code=BF16_NATIVE_SIGMOID))
    assert result.error_type in (ErrorType.VALUE_MISMATCH, ErrorType.NAN_OR_INF), result.error_message
    assert BF16_INTERPRETER_NOTE in result.warnings
