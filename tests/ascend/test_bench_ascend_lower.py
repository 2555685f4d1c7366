"""bench/bench_ascend_lower.py's own logic (no triton-ascend needed): the occupancy cap the lowering facts
give on an H200 SM, the estimate with that cap, the rank statistics and the report."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from ascend_kernel_gym.ascend.counters import KernelCounters, LaunchCounters


def _bench():
    path = Path(__file__).resolve().parents[2] / "bench" / "bench_ascend_lower.py"
    spec = importlib.util.spec_from_file_location("akg_bench_ascend_lower", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_occupancy_cap_comes_from_registers_and_shared_memory() -> None:
    bench = _bench()
    assert bench.occupancy_cap({"vector_bytes": 0, "cube_bytes": 0}, None) is None
    assert bench.occupancy_cap({"vector_bytes": 64 * 1024, "accumulator_bytes": 0}, None) == 4  # 256 KB / 64 KB
    assert bench.occupancy_cap({"vector_bytes": 1 << 30}, None) == 1  # never below one program
    # dot operands: 32 KB x 3 stages (Triton's default on CUDA) against 228 KB -> 2; x1 stage -> 7
    assert bench.occupancy_cap({"cube_bytes": 32 * 1024, "accumulator_bytes": 16 * 1024}, None) == 2
    assert bench.occupancy_cap({"cube_bytes": 32 * 1024}, 1) == 7


def test_a_tighter_cap_never_makes_the_estimate_faster() -> None:
    bench = _bench()
    launch = LaunchCounters(
        kernel="k", grid=[8192], programs=8192, programs_run=8192, num_warps=4, arg_bytes=1 << 26,
        bytes_loaded=float(1 << 26), bytes_stored=float(1 << 25), memops=8192 * 2, vector_ops=8192 * 1024.0,
    )  # fmt: skip
    counters = KernelCounters(launches=[launch]).to_dict()
    before, same, changed = bench.estimate_after(counters, [None])
    assert same == pytest.approx(before) and changed == 0
    before, after, changed = bench.estimate_after(counters, [{"facts": {"vector_bytes": 200 * 1024}}])
    assert changed == 1 and after >= before  # one program per SM instead of up to 16


def test_rank_summary_and_report() -> None:
    bench = _bench()
    rows = [
        {"task": "t", "variant": v, "measured_ms": m, "before_ms": b, "ref_ms": 2.0, "before_speedup": 2.0 / b}
        for v, m, b in (("original", 1.0, 1.0), ("a", 2.0, 3.0), ("b", 3.0, 2.0))
    ]
    summary = bench.rank_summary(rows, "before_ms", "before_speedup")
    assert summary["variants"] == 3 and summary["top1"] == 1.0
    assert summary["mean_task_rho"] == pytest.approx(0.5)
    text = bench.render({"date": "d", "machine": "m", "command": "c"}, {"corpus": {"rows": [
        {"case": "x", "lowering": "lowering_failed", "first_line": "a | b", "rule_errors": [], "rule_warnings": ["w"]}
    ]}})  # fmt: skip
    assert "| x | lowering_failed | a / b | - | w |" in text
