"""bench/gpu_ray_scaling.py (issue 25): its arguments, the repeated burst, the comparisons and the dip;
the run itself needs GPUs (its interpreter dry run is the script's own smoke test)."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(ROOT / "bench"))
    spec = importlib.util.spec_from_file_location("bench_gpu_ray_scaling", ROOT / "bench" / "gpu_ray_scaling.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_gpu_counts_parse_sorted_and_positive(bench) -> None:
    assert bench.parse_counts("4,1,2,2") == [1, 2, 4]
    with pytest.raises(argparse.ArgumentTypeError):
        bench.parse_counts("0,2")


def test_the_burst_is_repeated_with_distinct_code(bench) -> None:
    from ascend_kernel_gym.tasks import get_task

    items = bench.burst([get_task("core/L1/relu")], "small")
    assert [i["kind"] for i in items] == ["solution", "broken"]
    many = bench.repeated(items, 7)
    assert len(many) == 8 and len({i["request"].code for i in many}) == 8  # no two alike: no cache hits
    assert many[0]["request"].code == items[0]["request"].code and many[2]["copy"] == 1


def test_speedups_compare_and_the_dip(bench) -> None:
    rows = [
        {"task": "a", "kind": "solution", "ok": True, "speedup": 2.0},
        {"task": "a", "kind": "solution", "ok": True, "speedup": 2.2},
        {"task": "a", "kind": "broken", "ok": False, "speedup": None},
        {"task": "b", "kind": "solution", "ok": False, "speedup": None},
    ]
    assert bench.speedups(rows) == {"a": pytest.approx(2.1)}
    cmp = bench.compare({"a": 2.0, "b": 1.0}, {"a": 2.02, "b": 1.1})
    assert cmp["compared"] == 2 and cmp["max_rel_diff"] == pytest.approx(0.1)
    assert [t for t, _, _ in cmp["moved"]] == ["b"]
    dip = bench.dip([1.0, 2.0, 30.0, 70.0, 80.0, 119.0], kill_s=60.0, makespan=120.0)
    assert dip == {"after_kill_per_min": 3.0, "average_per_min": 3.0}
