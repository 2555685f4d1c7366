"""Benchmark metrics over a run's episodes (pure functions, no I/O).

Definitions (the unit is one *episode* = one sample of one task; its outcome is its best attempt):

- **compile rate**: share of expected episodes whose best attempt compiled.
- **correctness rate**: share of expected episodes whose best attempt is correct and not a hack.
- **fast_p** (KernelBench): share of expected episodes whose best attempt is correct, not a hack
  and has a measured speedup strictly greater than ``p``, for ``p`` in :data:`FAST_P_THRESHOLDS`.
  Expected episodes = every task of the run's task set times the number of samples; a missing
  episode counts as a failure. When the backend does not measure speed (the interpreter),
  ``fast_p`` for ``p > 0`` is ``None`` (not applicable). ``fast_0`` always equals the correctness
  rate (any kernel that runs has a speedup above 0; a correct kernel whose timing failed counts too).
- **geometric-mean speedup**: over episodes that are correct, not hacks and have a measured speedup.
- **hack rate**: share of evaluated attempts (every turn that contained code) flagged as a hack;
  ``hack_task_rate`` is the share of tasks with at least one hacking attempt.
- **pass@k**: unbiased estimator ``1 - C(n-c, k) / C(n, k)`` per task (n samples, c correct and not
  hack; missing samples count as incorrect), averaged over tasks.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from ascend_kernel_gym.leaderboard.records import is_ok, measured_speedup

FAST_P_THRESHOLDS: tuple[float, ...] = (0.0, 0.5, 0.8, 1.0, 1.5, 2.0)
PASS_AT_K_CANDIDATES: tuple[int, ...] = (1, 5, 10, 100)


def fast_key(p: float) -> str:
    """``fast_0``, ``fast_0.5``, ``fast_1``, ..."""
    return f"fast_{p:g}"


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k estimate from ``n`` samples of which ``c`` are correct (Chen et al., 2021).

    Raises:
        ValueError: when not ``0 <= c <= n`` or not ``1 <= k <= n``.
    """
    if not 0 <= c <= n:
        raise ValueError(f"pass_at_k: need 0 <= c <= n, got n={n}, c={c}")
    if not 1 <= k <= n:
        raise ValueError(f"pass_at_k: need 1 <= k <= n, got n={n}, k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def geometric_mean(values: Iterable[float]) -> float | None:
    """Geometric mean of positive numbers; ``None`` for an empty input.

    Raises:
        ValueError: on a value that is not a positive finite number.
    """
    logs = []
    for value in values:
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
            raise ValueError(f"geometric_mean: values must be positive finite numbers, got {value!r}")
        logs.append(math.log(value))
    if not logs:
        return None
    return math.exp(sum(logs) / len(logs))


def pass_at_k_values(samples: int) -> list[int]:
    """The k reported for ``samples`` samples: 1, 5, 10, 100 where <= samples, and ``samples`` itself."""
    return sorted({k for k in PASS_AT_K_CANDIDATES if k <= samples} | {max(samples, 1)})


def _estimated_speedup(result: dict[str, Any] | None) -> float | None:
    """A cost-model estimate carried by an interpreter result, if any (never a measurement)."""
    if not is_ok(result):
        return None
    estimate = result.get("estimate")  # type: ignore[union-attr]
    if not isinstance(estimate, dict):
        return None
    value = estimate.get("speedup", estimate.get("est_speedup"))
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        return None
    return float(value)


def compute_group_metrics(
    task_ids: Sequence[str],
    records: Iterable[dict[str, Any]],
    *,
    samples: int,
    speedup_measured: bool,
) -> dict[str, Any]:
    """Metrics for one group of tasks.

    Args:
        task_ids: the task set (every task counts, whether or not it has episodes).
        records: episode records with ``task_id``, ``sample``, ``best_result`` (an EvalResult dict
            or ``None``) and ``turns`` (each with an ``eval`` dict); records of other tasks or of
            samples outside ``range(samples)`` are ignored.
        samples: samples per task.
        speedup_measured: whether the backend measures speed (``False`` on the interpreter).
    """
    if samples < 1:
        raise ValueError(f"samples must be >= 1, got {samples}")
    wanted = set(task_ids)
    by_key: dict[tuple[str, int], dict[str, Any]] = {}
    for record in records:
        key = (str(record["task_id"]), int(record["sample"]))
        if key[0] in wanted and 0 <= key[1] < samples:
            by_key[key] = record
    n_tasks = len(wanted)
    expected = n_tasks * samples
    compiled = correct = 0
    fast_counts = dict.fromkeys(FAST_P_THRESHOLDS, 0)
    speedups: list[float] = []
    estimates: list[float] = []
    attempts = hack_attempts = 0
    hack_tasks: set[str] = set()
    correct_per_task = dict.fromkeys(wanted, 0)
    for (task_id, _sample), record in by_key.items():
        best = record.get("best_result")
        if best and best.get("compiled"):
            compiled += 1
        if is_ok(best):
            correct += 1
            correct_per_task[task_id] += 1
            fast_counts[0.0] += 1  # a kernel that runs is faster than "0x"; also fast_0 = correctness
            speed = measured_speedup(best)
            if speed is not None:
                speedups.append(speed)
                for p in FAST_P_THRESHOLDS:
                    if p > 0 and speed > p:
                        fast_counts[p] += 1
            estimate = _estimated_speedup(best)
            if estimate is not None:
                estimates.append(estimate)
        for turn in record.get("turns", []):
            result = turn.get("eval") or {}
            if result.get("format_ok"):
                attempts += 1
                if result.get("hack"):
                    hack_attempts += 1
                    hack_tasks.add(task_id)

    def share(count: int, total: int) -> float | None:
        return count / total if total else None

    fast = {}
    for p in FAST_P_THRESHOLDS:
        fast[fast_key(p)] = share(fast_counts[p], expected) if speedup_measured or p == 0.0 else None
    pass_k = {}
    for k in pass_at_k_values(samples):
        pass_k[f"pass@{k}"] = (
            sum(pass_at_k(samples, c, k) for c in correct_per_task.values()) / n_tasks if n_tasks else None
        )
    metrics: dict[str, Any] = {
        "tasks": n_tasks,
        "samples": samples,
        "episodes_expected": expected,
        "episodes_found": len(by_key),
        "compile_rate": share(compiled, expected),
        "correct_rate": share(correct, expected),
        **fast,
        "geomean_speedup": geometric_mean(speedups),
        "speedups_measured": len(speedups),
        "speedup_measured": speedup_measured,
        "hack_rate": share(hack_attempts, attempts),
        "hack_attempts": hack_attempts,
        "attempts": attempts,
        "hack_task_rate": share(len(hack_tasks), n_tasks),
        **pass_k,
    }
    if estimates and not speedup_measured:
        metrics["est_geomean_speedup"] = geometric_mean(estimates)
    return metrics


def compute_metrics(
    tasks: Sequence[dict[str, Any]],
    records: Iterable[dict[str, Any]],
    *,
    samples: int,
    speedup_measured: bool,
) -> dict[str, Any]:
    """Overall, per-level and per-category metrics.

    Args:
        tasks: the run's task set, each ``{"id", "level", "category"}``.
        records: episode records (see :func:`compute_group_metrics`).
        samples: samples per task.
        speedup_measured: whether the backend measures speed.

    Returns:
        ``{"overall": {...}, "by_level": {"1": {...}}, "by_category": {"activation": {...}}}``.
    """
    records = list(records)
    ids = [t["id"] for t in tasks]
    if len(set(ids)) != len(ids):
        raise ValueError("compute_metrics: duplicate task ids in the task set")
    options = {"samples": samples, "speedup_measured": speedup_measured}
    by_level: dict[str, list[str]] = {}
    by_category: dict[str, list[str]] = {}
    for task in tasks:
        by_level.setdefault(str(task["level"]), []).append(task["id"])
        by_category.setdefault(str(task["category"]), []).append(task["id"])
    return {
        "overall": compute_group_metrics(ids, records, **options),
        "by_level": {k: compute_group_metrics(v, records, **options) for k, v in sorted(by_level.items())},
        "by_category": {k: compute_group_metrics(v, records, **options) for k, v in sorted(by_category.items())},
    }
