"""The result cache (evaluation/cache.py): what the key covers, hits and misses, LRU, the disk layer."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from ascend_kernel_gym.evaluation import EvalRequest, EvalResult, Evaluator
from ascend_kernel_gym.evaluation.cache import ResultCache, cache_key
from ascend_kernel_gym.evaluation.result import ErrorType, Stage
from ascend_kernel_gym.tasks import get_task


def result(task_id: str = "t", **fields) -> EvalResult:
    return EvalResult(task_id=task_id, backend="interpreter", profile="small", code_hash="abc", **fields)


def test_changed_harness_source_misses_the_cache(evaluator, relu_task, relu_solution, monkeypatch, tmp_path) -> None:
    from ascend_kernel_gym.evaluation import cache as cache_module
    from ascend_kernel_gym.evaluation import evaluator as evaluator_module

    harness = tmp_path / "harness"
    (harness / "sub").mkdir(parents=True)
    (harness / "profiling.py").write_text("MEDIAN = 1\n")
    (harness / "sub" / "child.py").write_text("x = 1\n")
    before = cache_module.harness_fingerprint(harness)
    assert cache_module.harness_fingerprint(harness) == before  # stable
    (harness / "sub" / "child.py").write_text("x = 2\n")
    cache_module.harness_fingerprint.cache_clear()
    assert cache_module.harness_fingerprint(harness) != before  # any file's content counts

    monkeypatch.setattr(evaluator, "cache", ResultCache())
    request = EvalRequest(task=relu_task, code=relu_solution + "\n# fingerprint\n")
    assert not evaluator.evaluate(request).cache_hit
    assert evaluator.evaluate(request).cache_hit
    monkeypatch.setattr(evaluator_module, "harness_fingerprint", lambda: "a different harness")
    assert not evaluator.evaluate(request).cache_hit


def test_disk_cache_survives_instances(tmp_path) -> None:
    result = EvalResult(task_id="t", backend="interpreter", profile="small", code_hash="abc", correct=True)
    ResultCache(directory=tmp_path).put("k" * 64, result)
    again = ResultCache(directory=tmp_path).get("k" * 64)
    assert again is not None and again.cache_hit and again.correct
    timeout = EvalResult(task_id="t", backend="b", profile="p", code_hash="c", error_type=ErrorType.TIMEOUT)
    cache = ResultCache()
    cache.put("x", timeout)
    assert cache.get("x") is None  # timeouts depend on load, never cached


def test_hit_and_miss_counts_and_a_hit_is_a_private_copy() -> None:
    cache = ResultCache()
    assert cache.get("k") is None and (cache.hits, cache.misses) == (0, 1)
    stored = result(correct=True, stage=Stage.DONE, warnings=["w"])
    cache.put("k", stored)
    stored.warnings.append("changed after put")
    first = cache.get("k")
    assert first is not None and first.cache_hit and first.warnings == ["w"] and (cache.hits, cache.misses) == (1, 1)
    first.warnings.append("changed by a reader")
    again = cache.get("k")
    assert again is not None and again.warnings == ["w"] and again is not first
    assert not stored.cache_hit  # put never marks the caller's object


def test_a_hit_put_back_is_stored_as_a_fresh_result(tmp_path: Path) -> None:
    cache = ResultCache(directory=tmp_path)
    cache.put("k" * 64, result(cache_hit=True))
    (path,) = tmp_path.rglob("*.json")
    assert path.parent.name == "kk" and json.loads(path.read_text())["cache_hit"] is False


def test_least_recently_used_results_leave_memory_first() -> None:
    cache = ResultCache(max_items=2)
    cache.put("a", result("a"))
    cache.put("b", result("b"))
    assert cache.get("a") is not None  # "b" is now the least recently used
    cache.put("c", result("c"))
    assert len(cache) == 2 and cache.get("b") is None
    assert cache.get("a").task_id == "a" and cache.get("c").task_id == "c"
    cache.clear()
    assert len(cache) == 0 and cache.get("a") is None
    with pytest.raises(ValueError, match="max_items"):
        ResultCache(max_items=0)


def test_the_disk_layer_outlives_memory_eviction_and_clear(tmp_path: Path) -> None:
    cache = ResultCache(max_items=1, directory=tmp_path)
    cache.put("a" * 64, result("a"))
    cache.put("b" * 64, result("b"))  # evicts "a" from memory only
    cache.clear()
    assert cache.get("a" * 64).task_id == "a" and cache.get("b" * 64).task_id == "b"


@pytest.mark.parametrize("text", ["{not json", '{"task_id": "t"}', '{"unknown_field": 1}', "[]", ""])
def test_a_corrupted_entry_is_a_miss_and_is_replaced_by_the_next_put(tmp_path: Path, text: str) -> None:
    cache = ResultCache(directory=tmp_path)
    key = "c" * 64
    cache.put(key, result("old"))
    (path,) = tmp_path.rglob("*.json")
    path.write_text(text)
    fresh = ResultCache(directory=tmp_path)
    assert fresh.get(key) is None and fresh.hits == 0
    fresh.put(key, result("new"))
    assert ResultCache(directory=tmp_path).get(key).task_id == "new"


def test_harness_errors_are_not_cached() -> None:
    cache = ResultCache()
    cache.put("h", result(error_type=ErrorType.HARNESS_ERROR))
    assert cache.get("h") is None and len(cache) == 0


def test_cache_key_is_order_free_and_changes_with_any_value() -> None:
    parts = {"code": "abc", "task": "t", "seed": None, "reps": [100, 3], "dir": Path("/x")}
    key = cache_key(parts)
    assert len(key) == 64 and key == cache_key(dict(reversed(list(parts.items()))))
    for name, other in [("code", "abd"), ("seed", 0), ("reps", [100, 4]), ("dir", Path("/y")), ("task", None)]:
        assert cache_key({**parts, name: other}) != key, name
    assert cache_key({**parts, "extra": 1}) != key


@pytest.fixture
def counting_evaluator(relu_task):
    """An evaluator with a cache whose jobs only count (no worker runs)."""
    ev = Evaluator(backend="interpreter", workers=1, start=False, cache=False, num_trials=3)
    ev.cache = ResultCache()
    runs: list[object] = []

    def fake_run_job(job, timeout, base):
        runs.append(job)
        done = EvalResult.from_dict(base.to_dict())
        done.correct, done.stage = True, Stage.DONE
        return done

    ev._run_job = fake_run_job
    try:
        yield ev, runs
    finally:
        ev.close()


def test_every_input_that_can_change_a_verdict_changes_the_key(counting_evaluator, relu_task, relu_solution) -> None:
    ev, runs = counting_evaluator
    base = EvalRequest(task=relu_task, code=relu_solution, profile="small")
    assert not ev.evaluate(base).cache_hit and ev.evaluate(base).cache_hit and len(runs) == 1
    edited_task = dataclasses.replace(relu_task, source=relu_task.source + "\n# edited\n")
    variants = {
        "code": dataclasses.replace(base, code=relu_solution + "\n# other\n"),
        "profile": dataclasses.replace(base, profile="full"),
        "trials": dataclasses.replace(base, num_trials=2),
        "performance": dataclasses.replace(base, measure_performance=False),
        "seed": dataclasses.replace(base, seed=7),
        "task": dataclasses.replace(base, task=get_task("core/L1/sigmoid"), code=relu_solution),
        "task source": dataclasses.replace(base, task=edited_task),
        "atol": dataclasses.replace(base, task=dataclasses.replace(relu_task, atol=0.5)),
        "rtol": dataclasses.replace(base, task=dataclasses.replace(relu_task, rtol=0.5)),
    }
    for name, request in variants.items():
        before = len(runs)
        assert not ev.evaluate(request).cache_hit, name
        assert ev.evaluate(request).cache_hit and len(runs) == before + 1, name
    # the same request on an evaluator with other Ascend or timing settings is a new evaluation
    for attribute, value in [("ascend_checks", "enforce"), ("ascend_profile", "910B4"), ("profile_reps", 7)]:
        setattr(ev, attribute, value)
        before = len(runs)
        assert not ev.evaluate(base).cache_hit and len(runs) == before + 1, attribute
    # a timeout is not served again: the next identical request runs
    ev._run_job = lambda job, timeout, base_result: dataclasses.replace(base_result, error_type=ErrorType.TIMEOUT)
    timed_out = dataclasses.replace(base, seed=99)
    assert ev.evaluate(timed_out).error_type == ErrorType.TIMEOUT and not ev.evaluate(timed_out).cache_hit
