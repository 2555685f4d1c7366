"""bench/gpu_concurrency.py (issue 24's burst at several workers per GPU): its arguments, its plan and
comparisons, and a tiny run on the CPU interpreter, so that the H200 run works the first time."""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def bench():
    return _load("gpu_concurrency")


def test_arguments(bench) -> None:
    args = bench.build_parser().parse_args([])
    assert args.backend == "cuda" and args.concurrency == [1, 2, 4, 8] and args.reps == 100
    assert (
        args.timing_budget_s == 1.0  # the evaluator's default
        and bench.build_parser().parse_args(["--timing-budget-s", "0"]).timing_budget_s == 0  # off
    )
    assert args.budget_s < 540  # the whole script fits one 10-minute call
    args = bench.build_parser().parse_args(["--concurrency", "8,1,2,2", "--backend", "interpreter", "--dry"])
    assert args.concurrency == [1, 2, 8] and args.dry
    with pytest.raises(argparse.ArgumentTypeError):
        bench.parse_concurrency("0,2")
    assert args.bursts == 1
    with pytest.raises(SystemExit, match="--bursts"):
        bench.main(["--bursts", "0", "--dry", "--backend", "interpreter"])


def test_runs_go_by_priority(bench) -> None:
    plan = bench.plan([1, 2, 4, 8], ["interleaved", "shuffled"])
    assert plan[:3] == [(1, "interleaved"), (8, "interleaved"), (1, "shuffled")]
    assert sorted(plan) == sorted((c, o) for c in (1, 2, 4, 8) for o in ("interleaved", "shuffled"))


def test_the_burst_pairs_each_solution_with_a_broken_variant(bench) -> None:
    from ascend_kernel_gym.tasks import get_task

    items = bench.burst([get_task("core/L1/relu"), get_task("core/L1/softmax")], "small")
    assert [i["kind"] for i in items] == ["solution", "broken", "solution", "broken"]
    assert "deliberately broken" in items[1]["request"].code
    shuffled = bench.ordered(items, "shuffled", seed=0)
    assert sorted(i["label"] for i in shuffled) == sorted(i["label"] for i in items)
    assert bench.ordered(items, "shuffled", seed=0) == shuffled  # a fixed order, the same in every run


def _row(label: str, ok: bool, speedup: float | None) -> dict:
    return {"label": label, "ok": ok, "speedup": speedup}


def test_speedups_are_compared_only_where_both_runs_are_correct(bench) -> None:
    base = {"rows": [_row("a", True, 2.0), _row("b", True, 1.0), _row("c", True, 3.0), _row("d", False, None)]}
    other = {"rows": [_row("a", True, 2.02), _row("b", True, 1.10), _row("c", False, None), _row("d", False, None)]}
    cmp = bench.compare(base, other)
    assert cmp["compared"] == 2 and cmp["max_rel"] == pytest.approx(0.10) and cmp["over"] == 1
    assert cmp["verdicts_changed"] == ["c"] and cmp["worst"][0]["label"] == "b"
    assert bench.percentile([3.0, 1.0, 2.0], 0.5) == 2.0 and bench.percentile([], 0.5) is None


@pytest.mark.slow
def test_a_tiny_run_on_the_interpreter(tmp_path) -> None:
    out = tmp_path / "c.md"
    argv = ["--backend", "interpreter", "--dry", "--tasks", "core/L1/relu", "--concurrency", "1,2"]
    argv += ["--orders", "interleaved", "--bursts", "2", "--out", str(out)]
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "gpu_concurrency.py"), *argv],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "run: 2 per device" in proc.stdout  # progress as it goes
    data = json.loads(out.with_suffix(".json").read_text())
    runs = data["runs"]
    # the baseline once; the higher concurrency twice through one evaluator
    assert [(r["per_device"], r["order"], r["burst"]) for r in runs] == [
        (1, "interleaved", 1), (2, "interleaved", 1), (2, "interleaved", 2),
    ]  # fmt: skip
    assert runs[2]["warm_s"] == 0.0 and runs[1]["warm_s"] > 0
    for run in runs:
        # each evaluation says how long it waited for a worker and for the device
        assert all(row["stages"]["queued"] >= 0 and "device_wait" in row["stages"] for row in run["rows"])
        assert run["ok"] == 1 and len(run["rows"]) == 2 and run["per_min"] > 0
        broken = [row for row in run["rows"] if not row["ok"]]
        assert len(broken) == 1 and broken[0]["error"]  # each failure keeps what it said
        assert run["retries"] == 0 and run["memory_waits"] == 0  # nothing shares a device on the interpreter
        assert all(row["memory_mb"] == {} and row["retry"] is None for row in run["rows"])
    text = out.read_text()
    assert "| 2 (2 in all) | interleaved |" in text and "| 2 (2 in all) | interleaved, burst 2 |" in text
    assert "- c=2 interleaved, burst 2: the workers held an evaluation" in text
    # the host's load was sampled through each burst (the CPUs at least; no GPU here)
    load = runs[1]["load"]
    assert load["all"]["samples"] >= 1 and 0.0 <= load["all"]["cpu"] <= 1.0 and load["all"]["gpu"] is None
    assert len(runs[1]["load_samples"]) >= load["all"]["samples"]
    assert "akg-candidate" in load["all"]["cpu_s_by_name"]  # the evaluator's processes say what they are
    assert "- c=2 interleaved: load (CPUs busy, processes ready to run, GPU busy): whole burst " in text


def test_load_is_split_by_the_spans_it_falls_in() -> None:
    host_load = _load("host_load")
    samples = [
        {"t": t, "cpu": cpu, "running": run, "gpu": gpu, "gpu_mem_gib": None}
        for t, cpu, run, gpu in [(0.5, 0.9, 4, 100), (1.5, 0.5, 2, 20), (2.5, 0.1, 1, 0), (9.0, 1.0, 9, 100)]
    ]
    summary = host_load.load_summary(samples, 0.0, 3.0, [(1.0, 2.0)])  # the last sample is past the window
    assert summary["all"]["samples"] == 3 and summary["all"]["cpu"] == 0.5
    assert summary["in_spans"] == {
        "samples": 1, "cpu_s_by_name": {}, "gpu_s_by_name": {}, "cpu": 0.5, "running": 2.0, "gpu": 20.0,
        "gpu_mem_gib": None,
    }  # fmt: skip
    samples[1]["cpu_s_by_name"] = {"akg-candidate": 0.2, "python": 0.05}
    samples[2]["cpu_s_by_name"] = {"akg-candidate": 0.1}
    summary = host_load.load_summary(samples, 0.0, 3.0, [(1.0, 2.0)])
    assert summary["all"]["cpu_s_by_name"] == {"akg-candidate": 0.3, "python": 0.1}  # rounded to 0.1 s
    assert summary["outside"]["cpu_s_by_name"] == {"akg-candidate": 0.1}
    assert summary["outside"]["samples"] == 2 and summary["outside"]["gpu"] == 50.0
    assert summary["outside"]["running"] == 2.5
    with host_load.LoadSampler(period_s=0.01) as sampler:
        deadline = time.perf_counter() + 30
        while len(sampler.samples) < 3 and time.perf_counter() < deadline:
            time.sleep(0.01)
    assert len(sampler.samples) >= 3 and all(0.0 <= s["cpu"] <= 1.0 for s in sampler.samples if s["cpu"] is not None)
    with pytest.raises(ValueError, match="period_s"):
        host_load.LoadSampler(period_s=0)


def test_harness_errors_are_listed_with_their_messages(bench) -> None:
    row = {"label": "t solution", "ok": False, "speedup": None, "error_type": "harness_error", "error": "out of memory"}
    run = {"per_device": 8, "workers": 8, "order": "interleaved", "rows": [row], "ok": 0}
    run |= {"per_min": 1.0, "makespan_s": 1.0, "warm_s": 1.0, "p50_s": 1.0, "p95_s": 1.0}
    meta = {"backend": "cuda", "requests": 1, "date": "-", "device": "-", "cores": 1, "versions": {}, "python": "3"}
    meta |= {"command": "-", "tasks": 1, "profile": "full", "reps": 1, "ascend": False, "left_out": []}
    lines = [line for line in bench.render(meta, [run]).splitlines() if "harness error" in line]
    assert lines == ["- c=8 interleaved: harness error in t solution: out of memory"]
    # retries and evaluations held back for memory are said per run
    run |= {"retries": 2, "memory_waits": 5}
    lines = [line for line in bench.render(meta, [run]).splitlines() if "held back" in line]
    assert lines == ["- c=8 interleaved: 2 run again after an out-of-memory, 5 held back until they fit"]
    # a run cut short says so in its row
    table = bench.render(meta, [run | {"partial": "45 of 90 requests finished"}])
    assert "| interleaved (cut short: 45 of 90 requests finished) |" in table
    # how many evaluations' judges ran the reference (a deferred plan is built only after a first call)
    run["rows"] = [row | {"memory_mb": {"reference_plan": 5.0}}, row | {"memory_mb": {"reference": 1.0}}]
    lines = [line for line in bench.render(meta, [run]).splitlines() if "built a plan" in line]
    assert lines == ["- c=8 interleaved: the judge built a plan (ran the reference) for 1 of 2 evaluations"]
    # where the checked rounds' copies waited, summed over the run
    run["rows"] = [
        row | {"checks_kept": {"agreed": 7, "device": 3, "host": 9, "at_once": 3}},
        row | {"checks_kept": {"device": 1}},  # a result from before the in-round check
        row | {"checks_kept": None},
    ]
    lines = [line for line in bench.render(meta, [run]).splitlines() if "kept" in line]
    assert lines == [
        "- c=8 interleaved: checked outputs that agreed with the reference's in their round 7; kept for a re-run "
        "of the reference on the device 4, in host memory 9, compared inside the lease 3; tensors kept as a sample 0"
    ]


def test_the_gaps_between_leases_say_whether_the_next_evaluation_was_waiting(bench) -> None:
    def row(start: float, end: float, quiet_wait: float) -> dict:
        return {"lease": {"span": [start, end]}, "phase_s": {"quiet_wait": quiet_wait}}

    # out of order on purpose: the leases are taken by their start
    rows = [row(10.0, 11.0, 0.5), row(0.0, 2.0, 0.0), row(2.1, 4.0, 1.0), {"lease": None}, {"phase_s": {}}]
    gaps = bench.lease_gaps({"rows": rows})
    # 2.0 -> 2.1 (it asked at 1.1, before the end: waiting), 4.0 -> 10.0 (it asked at 9.5: nobody was ready)
    assert gaps == {"gaps": 2, "gap_s": 6.1, "asking": 1}
    assert bench.lease_gaps({"rows": rows[:1]}) is None


def test_ray_overhead_bench_arguments() -> None:
    bench = _load("bench_ray_overhead")
    args = bench.build_parser().parse_args(["--copies", "1", "--bursts", "2"])
    assert (args.copies, args.bursts, args.workers) == (1, 2, 2)
    requests = bench.requests_for(["core/L1/relu"], 2, burst=0, trials=1)
    assert len({r.code for r in requests}) == 2 and all(r.num_trials == 1 for r in requests)


def test_gpu_seconds_are_averaged_over_nvmls_samples_per_process_name(monkeypatch) -> None:
    host_load = _load("host_load")
    names = {11: "akg-candidate", 12: "akg-reference", 13: "akg-candidate"}
    monkeypatch.setattr(host_load, "_name_of", lambda pid: names.get(pid, "(exited)"))
    rows = [(11, 100, 60), (12, 100, 30), (11, 200, 80), (13, 200, 20), (12, 50, 99)]  # (pid, time, SM %)

    class FakeNvml:
        def nvmlDeviceGetProcessUtilization(self, handle, samples, count, since):
            kept = [r for r in rows if r[1] > since.value]
            if samples is None:
                count._obj.value = len(rows)
                return 7  # NVML_ERROR_INSUFFICIENT_SIZE
            for i, (pid, stamp, sm) in enumerate(rows):  # NVML hands back older samples too
                samples[i].pid, samples[i].timeStamp, samples[i].smUtil = pid, stamp, sm
            count._obj.value = len(rows)
            return 0 if kept else 6

    gpu = host_load._Gpu.__new__(host_load._Gpu)
    gpu.lib, gpu.handle = FakeNvml(), None
    shares, newest = gpu.by_process(60)  # the sample at 50 is older: left out
    assert newest == 200
    # two sample times: the candidates' (60 + 80 + 20) / 2, the reference's 30 / 2
    assert shares == {"akg-candidate": 80.0, "akg-reference": 15.0}
    rows.clear()
    assert gpu.by_process(200) == ({}, 200)
