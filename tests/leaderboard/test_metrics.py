"""Metric definitions on hand-made results (no evaluator involved)."""

from __future__ import annotations

import json
import math

import pytest
from lb_helpers import episode, result, task_rows

from ascend_kernel_gym.leaderboard.metrics import (
    compute_group_metrics,
    compute_metrics,
    geometric_mean,
    pass_at_k,
    pass_at_k_values,
)


def group(task_ids, records, *, samples=1, measured=True):
    return compute_group_metrics(task_ids, records, samples=samples, speedup_measured=measured)


def test_fast_p_is_strictly_greater_than_p():
    ids = ["a", "b", "c", "d", "e"]
    records = [
        episode("a", 0, result(correct=True, speedup=1.0)),  # exactly 1: not fast_1
        episode("b", 0, result(correct=True, speedup=1.0000001)),
        episode("c", 0, result(correct=True, speedup=0.5)),  # exactly 0.5: not fast_0.5
        episode("d", 0, result(correct=True, speedup=2.0)),  # exactly 2: not fast_2
        episode("e", 0, result(correct=True, speedup=0.8)),  # exactly 0.8: not fast_0.8
    ]
    m = group(ids, records)
    assert m["fast_0"] == pytest.approx(5 / 5)
    assert m["fast_0.5"] == pytest.approx(4 / 5)  # a, b, d, e
    assert m["fast_0.8"] == pytest.approx(3 / 5)  # a, b, d
    assert m["fast_1"] == pytest.approx(2 / 5)  # b, d
    assert m["fast_1.5"] == pytest.approx(1 / 5)  # d
    assert m["fast_2"] == 0.0


def test_missing_tasks_count_as_failures():
    ids = ["a", "b", "c", "d"]
    records = [episode("a", 0, result(correct=True, speedup=3.0)), episode("b", 0, result(compiled=True))]
    m = group(ids, records)
    assert m["episodes_expected"] == 4 and m["episodes_found"] == 2
    assert m["compile_rate"] == pytest.approx(2 / 4)
    assert m["correct_rate"] == pytest.approx(1 / 4)
    assert m["fast_1"] == pytest.approx(1 / 4)
    assert m["pass@1"] == pytest.approx(1 / 4)


def test_records_outside_the_task_set_or_sample_range_are_ignored():
    records = [
        episode("a", 0, result(correct=True, speedup=2.0)),
        episode("zzz", 0, result(correct=True, speedup=2.0)),
        episode("a", 5, result(correct=True, speedup=2.0)),
    ]
    m = group(["a", "b"], records, samples=2)
    assert m["episodes_found"] == 1
    assert m["correct_rate"] == pytest.approx(1 / 4)


def test_hacks_are_neither_correct_nor_fast_and_count_in_hack_rate():
    ids = ["a", "b"]
    records = [
        episode("a", 0, result(correct=True, hack=True, speedup=5.0)),
        episode("b", 0, result(correct=False, compiled=True), result(correct=True, speedup=1.5)),
    ]
    m = group(ids, records)
    assert m["correct_rate"] == pytest.approx(1 / 2)
    assert m["fast_1"] == pytest.approx(1 / 2)
    assert m["fast_2"] == 0.0
    assert m["geomean_speedup"] == pytest.approx(1.5)
    assert m["hack_attempts"] == 1 and m["attempts"] == 3
    assert m["hack_rate"] == pytest.approx(1 / 3)
    assert m["hack_task_rate"] == pytest.approx(1 / 2)


def test_turns_without_code_are_not_attempts():
    m = group(["a"], [episode("a", 0, None, result(hack=True))])
    assert m["attempts"] == 1 and m["hack_rate"] == 1.0


def test_geometric_mean_over_correct_only():
    ids = ["a", "b", "c", "d"]
    records = [
        episode("a", 0, result(correct=True, speedup=2.0)),
        episode("b", 0, result(correct=True, speedup=8.0)),
        episode("c", 0, result(correct=False, compiled=True, speedup=100.0)),  # incorrect: ignored
        episode("d", 0, result(correct=True, hack=True, speedup=100.0)),  # hack: ignored
    ]
    m = group(ids, records)
    assert m["geomean_speedup"] == pytest.approx(4.0)
    assert m["speedups_measured"] == 2


def test_geometric_mean_function():
    assert geometric_mean([2.0, 8.0]) == pytest.approx(4.0)
    assert geometric_mean([0.5, 2.0, 1.0]) == pytest.approx(1.0)
    assert geometric_mean([]) is None
    with pytest.raises(ValueError, match="positive"):
        geometric_mean([1.0, 0.0])


def test_interpreter_has_no_fast_p_above_zero():
    ids = ["a", "b", "c"]
    records = [
        episode("a", 0, result(correct=True, backend="interpreter")),
        episode("b", 0, result(correct=True, backend="interpreter")),
        episode("c", 0, result(compiled=True, backend="interpreter")),
    ]
    m = group(ids, records, measured=False)
    assert m["fast_0"] == pytest.approx(2 / 3) == m["correct_rate"]
    for key in ("fast_0.5", "fast_0.8", "fast_1", "fast_1.5", "fast_2"):
        assert m[key] is None
    assert m["geomean_speedup"] is None
    assert m["speedup_measured"] is False


def test_pass_at_k_hand_values():
    assert pass_at_k(5, 2, 1) == pytest.approx(0.4)
    assert pass_at_k(5, 2, 2) == pytest.approx(1 - 3 / 10)  # 1 - C(3,2)/C(5,2)
    assert pass_at_k(5, 2, 3) == pytest.approx(1 - 1 / 10)  # 1 - C(3,3)/C(5,3)
    assert pass_at_k(5, 2, 4) == 1.0  # n - c < k
    assert pass_at_k(10, 3, 5) == pytest.approx(1 - math.comb(7, 5) / math.comb(10, 5))
    assert pass_at_k(3, 0, 2) == 0.0
    assert pass_at_k(4, 4, 1) == 1.0
    with pytest.raises(ValueError):
        pass_at_k(3, 4, 1)
    with pytest.raises(ValueError):
        pass_at_k(3, 1, 4)


def test_pass_at_k_from_samples_with_missing_samples():
    # task a: 4 samples, 2 correct -> pass@1 = 0.5, pass@2 = 1 - C(2,2)/C(4,2) = 5/6
    # task b: only 2 of 4 samples ran, 1 correct -> c = 1 of n = 4: pass@1 = 0.25, pass@2 = 1 - C(3,2)/C(4,2) = 0.5
    records = [
        episode("a", 0, result(correct=True, speedup=1.2)),
        episode("a", 1, result(compiled=True)),
        episode("a", 2, result(correct=True, speedup=0.9)),
        episode("a", 3, result(compiled=False)),
        episode("b", 0, result(correct=True, speedup=1.1)),
        episode("b", 2, result(compiled=True)),
    ]
    m = group(["a", "b"], records, samples=4)
    assert pass_at_k_values(4) == [1, 4]
    assert m["pass@1"] == pytest.approx((0.5 + 0.25) / 2)
    assert m["pass@4"] == pytest.approx((1.0 + 1.0) / 2)
    assert pass_at_k(4, 2, 2) == pytest.approx(5 / 6)
    # episode-level rates use all 8 expected episodes
    assert m["correct_rate"] == pytest.approx(3 / 8)
    assert m["fast_1"] == pytest.approx(2 / 8)


def test_per_level_and_category_groups():
    tasks = task_rows([("a", 1, "activation"), ("b", 1, "matmul"), ("c", 2, "matmul")])
    records = [
        episode("a", 0, result(correct=True, speedup=2.0)),
        episode("b", 0, result(compiled=True)),
        episode("c", 0, result(correct=True, speedup=0.5)),
    ]
    m = compute_metrics(tasks, records, samples=1, speedup_measured=True)
    assert m["overall"]["correct_rate"] == pytest.approx(2 / 3)
    assert m["by_level"]["1"]["correct_rate"] == pytest.approx(1 / 2)
    assert m["by_level"]["2"]["fast_1"] == 0.0
    assert m["by_category"]["matmul"]["tasks"] == 2
    assert m["by_category"]["matmul"]["correct_rate"] == pytest.approx(1 / 2)
    assert m["by_category"]["activation"]["fast_1"] == 1.0
    json.dumps(m, allow_nan=False)  # the report is strict JSON


def test_duplicate_task_ids_are_rejected():
    with pytest.raises(ValueError, match="duplicate"):
        compute_metrics(task_rows([("a", 1, "x"), ("a", 1, "x")]), [], samples=1, speedup_measured=True)
