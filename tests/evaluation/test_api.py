"""Evaluator API: results, JSON round trip, ordering, cache, threads, sharing, misuse."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import pytest

from ascend_kernel_gym.evaluation import (
    ErrorType,
    EvalRequest,
    EvalResult,
    Evaluator,
    LaunchRecord,
    Stage,
    get_shared_evaluator,
    render_feedback,
)
from ascend_kernel_gym.evaluation.cache import ResultCache


def test_package_import_is_light() -> None:
    code = (
        "import sys; import ascend_kernel_gym.evaluation as e; "
        "assert 'torch' not in sys.modules and 'triton' not in sys.modules, sorted(sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_correct_kernel_result(evaluator, relu_task, relu_solution) -> None:
    result = evaluator.evaluate(EvalRequest(task=relu_task, code=relu_solution, seed=3))
    assert result.ok and result.correct and not result.hack
    assert result.error_type == ErrorType.NONE and result.stage == Stage.DONE
    assert result.format_ok and result.static_ok and result.compiled
    assert result.trials_passed == result.trials_total == 5
    assert result.max_abs_err == 0.0  # ReLU is exact
    assert result.speedup is None and result.ref_ms is None  # nothing timed on the interpreter
    assert result.profile == "small" and result.backend == "interpreter"
    launch = result.launches[0]
    assert isinstance(launch, LaunchRecord)
    assert launch.kernel == "relu_kernel"
    assert launch.grid == [16]  # 16 x 1000 elements, BLOCK_SIZE 1024
    assert launch.constexprs == {"BLOCK_SIZE": 1024}
    assert launch.tensor_args[0] == [[16, 1000], "float32"]
    assert result.torch_ops == ["aten.empty_like"]
    assert "compile" in result.stage_durations and "correctness" in result.stage_durations
    parts = [key for key in result.stage_durations if key.startswith("compile.") and key != "compile.waited"]
    assert parts[:2] == ["compile.task", "compile.reference_check"]
    assert {"compile.snapshot", "compile.import", "compile.construct", "compile.first_call"} <= set(parts)
    assert sum(result.stage_durations[key] for key in parts) <= result.stage_durations["compile"] + 1e-3
    assert "Correct" in render_feedback(result)


def test_json_round_trip_of_real_results(evaluator, relu_task, relu_solution) -> None:
    good = evaluator.evaluate(EvalRequest(task=relu_task, code=relu_solution, seed=3))
    bad = evaluator.evaluate(EvalRequest(task=relu_task, code="import os\n" + relu_solution))
    for result in (good, bad):
        text = result.to_json()
        json.loads(text)  # plain JSON
        again = EvalResult.from_json(text)
        assert again == result
        assert again.to_dict() == result.to_dict()


def test_evaluate_many_keeps_request_order(evaluator, relu_task, relu_solution) -> None:
    codes = [
        relu_solution,
        "def broken(:\n",
        relu_solution.replace("tl.maximum(x, 0.0)", "x"),
        "import socket\n" + relu_solution,
        relu_solution,
    ]
    results = evaluator.evaluate_many([EvalRequest(task=relu_task, code=c, seed=5) for c in codes])
    assert [r.error_type for r in results] == [
        ErrorType.NONE,
        ErrorType.SYNTAX,
        ErrorType.VALUE_MISMATCH,
        ErrorType.FORBIDDEN,
        ErrorType.NONE,
    ]
    assert evaluator.evaluate_many([]) == []


def test_static_rejection_needs_no_worker(relu_task) -> None:
    ev = Evaluator(backend="interpreter", workers=1, start=False)
    try:
        result = ev.evaluate(EvalRequest(task=relu_task, code="import subprocess\nsubprocess.run(['id'])\n"))
        assert result.error_type == ErrorType.FORBIDDEN
        assert result.stage == Stage.STATIC and result.format_ok and not result.static_ok
        assert result.hack and result.hack_reasons
        unused = ev.evaluate(EvalRequest(task=relu_task, code="import subprocess\n"))
        assert unused.error_type == ErrorType.FORBIDDEN and not unused.hack  # refused, but no attempt
        assert not ev._handles[0].alive()  # no process was started for it
        empty = ev.evaluate(EvalRequest(task=relu_task, code="   "))
        assert empty.error_type == ErrorType.NO_CODE and empty.stage == Stage.FORMAT and not empty.format_ok
    finally:
        ev.close()


def test_a_reference_that_breaks_the_device_is_rerun_on_task_inputs_only(relu_task, relu_solution) -> None:
    from ascend_kernel_gym.evaluation.errors import REFERENCE_BROKE_DEVICE

    ev = Evaluator(backend="interpreter", workers=1, start=False, cache=False)
    jobs = []

    def fake_run_job(job, timeout, base):
        jobs.append(job.task_inputs_only)
        result = EvalResult.from_dict(base.to_dict())
        if not job.task_inputs_only:  # what a child reports after a device-side assert in the reference
            result.error_type = ErrorType.HARNESS_ERROR
            result.error_message = f"{REFERENCE_BROKE_DEVICE} (uniform): the reference model failed"
        else:
            result.error_type, result.correct = ErrorType.NONE, True
        return result

    ev._run_job = fake_run_job
    try:
        first = ev.evaluate(EvalRequest(task=relu_task, code=relu_solution))
        assert first.ok and jobs == [False, True]
        second = ev.evaluate(EvalRequest(task=relu_task, code=relu_solution + "\n"))
        assert second.ok and jobs == [False, True, True]  # known now: straight to the task's inputs
    finally:
        ev.close()


def test_concurrent_calls_from_threads(evaluator, relu_task, relu_solution) -> None:
    results: list[EvalResult] = []
    lock = threading.Lock()

    def work(i: int) -> None:
        code = relu_solution + f"\n# variant {i}\n"
        result = evaluator.evaluate(EvalRequest(task=relu_task, code=code))
        with lock:
            results.append(result)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 4
    assert all(r.ok for r in results), [r.error_message for r in results]
    assert len({r.code_hash for r in results}) == 4


def test_cache_hits_for_identical_resubmission(evaluator, relu_task, relu_solution, monkeypatch) -> None:
    monkeypatch.setattr(evaluator, "cache", ResultCache())
    request = EvalRequest(task=relu_task, code=relu_solution + "\n# cached\n")
    first = evaluator.evaluate(request)
    second = evaluator.evaluate(request)
    assert not first.cache_hit and second.cache_hit
    second.cache_hit = False
    assert second == first
    other_trials = evaluator.evaluate(EvalRequest(task=relu_task, code=request.code, num_trials=2))
    assert not other_trials.cache_hit and other_trials.trials_total == 2


def test_shared_evaluator_is_one_per_option_set() -> None:
    a = get_shared_evaluator("interpreter", start=False, workers=1)
    b = get_shared_evaluator("interpreter", workers=1, start=False)
    c = get_shared_evaluator("interpreter", workers=1, start=False, num_trials=3)
    try:
        assert a is b
        assert c is not a
    finally:
        a.close()
        c.close()
    d = get_shared_evaluator("interpreter", start=False, workers=1)
    assert d is not a  # a closed evaluator is replaced
    d.close()


def test_misuse_fails_fast(relu_task) -> None:
    with pytest.raises(ValueError, match="backend"):
        Evaluator(backend="tpu", start=False)
    with pytest.raises(ValueError, match="ascend_checks"):
        Evaluator(backend="interpreter", ascend_checks="maybe", start=False)
    with pytest.raises(ValueError, match="workers"):
        Evaluator(backend="interpreter", workers=0, start=False)
    ev = Evaluator(backend="interpreter", workers=1, start=False)
    try:
        with pytest.raises(TypeError, match="EvalRequest"):
            ev.evaluate("code")  # type: ignore[arg-type]
        with pytest.raises(KeyError, match="profile"):
            ev.evaluate(EvalRequest(task=relu_task, code="x", profile="huge"))
        with pytest.raises(ValueError, match="num_trials"):
            ev.evaluate(EvalRequest(task=relu_task, code="x", num_trials=0))
    finally:
        ev.close()
    with pytest.raises(RuntimeError, match="close"):
        ev.evaluate(EvalRequest(task=relu_task, code="x"))


def test_context_manager_closes_workers(relu_task) -> None:
    with Evaluator(backend="interpreter", workers=1, start=False) as ev:
        assert ev.workers == 1
    assert ev._closed
