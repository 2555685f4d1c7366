"""The GPU benchmark script runs end to end on the CPU (interpreter, dry run, without gymnasium),
so that the GPU run works the first time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

# Evaluates many kernels end to end: left out of the fast lane (`make test-fast`).
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]

RUNNER = """
import runpy, sys
sys.modules["gymnasium"] = None  # the GPU machine has no gymnasium
script, *args = sys.argv[1:]
sys.argv = [script, *args]
runpy.run_path(script, run_name="__main__")
"""


def _run_gpu_script(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run a bench script as on the GPU machine (no gymnasium), here on the CPU."""
    return subprocess.run(
        [sys.executable, "-c", RUNNER, script, *args], cwd=ROOT, capture_output=True, text=True, timeout=600
    )


def test_gpu_evaluator_dry_run(tmp_path) -> None:
    out = tmp_path / "gpu.md"
    proc = _run_gpu_script(
        "bench/gpu_evaluator.py",
        *("--backend", "interpreter", "--dry-run", "--tasks", "core/L1/relu", "--repeats", "1"),
        *("--relu-runs", "1", "--out", str(out)),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = out.read_text()
    assert "| core/L1/relu | 1/1 |" in text
    assert "fresh Python process per evaluation" in text and "warm pool (fork per evaluation)" in text
    data = json.loads(out.with_suffix(".json").read_text())
    assert data["relu"]["warm_ok"] == [True] and data["relu"]["fresh_ok"] == [True]
    assert data["meta"]["zygotes"][0]["device_touched"] is False


def _load_script(name: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


def test_timing_probe_separates_placement_from_drift() -> None:
    probe = _load_script("gpu_timing_probe")
    # one slow placement, the same in both cycles: a placement effect, no drift
    placement = probe.summarise_matrix([{"ms": [1.0, 1.0, 1.1]}, {"ms": [1.0, 1.0, 1.1]}])
    assert placement["between_placements_pct"] == pytest.approx(10.0) and placement["between_cycles_pct"] == 0.0
    # every placement slower in the second cycle: drift, no placement effect
    drift = probe.summarise_matrix([{"ms": [1.0, 1.0]}, {"ms": [1.1, 1.1]}])
    assert drift["between_placements_pct"] == 0.0 and drift["between_cycles_pct"] == pytest.approx(100 * 0.1 / 1.05)
    # the committed H200 report renders from its raw samples
    report = json.loads((ROOT / "bench" / "results" / "gpu_timing_probe_h200.json").read_text())
    text = probe.render(report)
    assert "| matmul_transposed_b:sol |" in text and "process 2, transpose:ref:" in text


def test_timing_probe_names_the_move_that_shifts_a_level() -> None:
    probe = _load_script("gpu_timing_probe")
    # the level moves only when the parameters were moved; it stays put after the other moves
    levels = [("none", 29.0), ("parameters", 30.0), ("scratch", 30.0), ("none", 30.0), ("parameters", 29.0)]
    cells = [{"perturb": kind, "ms": ms} for kind, ms in [*levels, ("scratch", 29.0)]]
    spreads = probe.summarise_perturbation(cells)
    assert spreads == {"none": 0.0, "parameters": pytest.approx(100 / 29.5), "scratch": 0.0}
    steady = [{"perturb": kind, "ms": 29.0} for kind in probe.PERTURBATIONS]
    assert set(probe.summarise_perturbation(steady).values()) == {0.0}
    text = probe.render({"device": "X", "torch": "2", "perturb": [{"a:sol": cells}, {"error": "boom"}]})
    assert "| 0 | a:sol | parameters | 30.0000, 29.0000 | 3.39% |" in text and "| 0 | a:sol | scratch |" in text
    assert "failed" in text
    assert "placements x cycles" not in text


def test_gpu_evaluator_notes_show_each_warning_once() -> None:
    bench = _load_script("gpu_evaluator")
    warnings = ["implausible speedup 17.9x (> 10x): check", "implausible speedup 18.0x (> 10x): check", "floor"]
    assert bench._distinct(warnings) == ["implausible speedup 17.9x (> 10x): check", "floor"]


def test_transpose_memory_probe_summarises_each_experiment() -> None:
    probe = _load_script("gpu_transpose_memory_probe")
    proc = {
        "map": [{"ref_ms": 1.9, "sol_ms": 0.3}, {"ref_ms": 1.8, "sol_ms": 0.31}],
        "fixed_x": [1.9, 1.9],
        "fixed_out": [1.9, 1.8],
        "revisit": [{"ref_ms": 1.85}],
        "realloc": [{"ref_ms": 1.7}, {"ref_ms": 1.75}],
        "contiguous_ms": 1.9,
        "offsets": {"x_at_offset": [1.8, 1.85], "out_at_offset": [1.9, 1.9]},
    }
    summary = probe.summarise(proc)
    assert summary["map ref"] == "1.800-1.900 (median 1.850)"
    assert summary["realloc ref"] == "1.700-1.750 (median 1.725)"
    assert summary["input at offsets"] == "1.800, 1.850"
    # the committed H200 report renders from its raw samples
    report = json.loads((ROOT / "bench" / "results" / "gpu_transpose_memory_probe_h200.json").read_text())
    text = probe.render(report)
    assert "| 2 | expandable_segments:True | fixed x, each out |" in text
    assert "process 0 map ref ms in allocation order: 1.855" in text
    flush = json.loads((ROOT / "bench" / "results" / "gpu_transpose_memory_probe_h200_flush.json").read_text())
    text = probe.render(flush)
    assert "| 3 | default | flush by reads, 6 buffers | 1.855," in text and "offsets (bytes" not in text


def test_timing_estimators_compare_summaries_of_the_same_calls(tmp_path) -> None:
    bench = _load_script("timing_estimators")
    steady = [1.0] * 100
    burst = [1.0] * 80 + [1.5] * 20  # a burst of slow calls at the end of one evaluation
    row = {"task": "t", "kernel_ms_samples": [steady, burst, steady], "ref_ms_samples": [[2.0] * 100] * 3}
    spreads = bench.task_spreads(row)
    assert spreads["median"]["speedup"] == 0.0 and spreads["minimum"]["kernel"] == 0.0
    assert spreads["mean"]["kernel"] == pytest.approx(10.0)  # mean 1.1 against 1.0
    assert spreads["trimmed mean (10%, the evaluator's)"]["kernel"] == pytest.approx(100 * 0.1 * 0.5 / 0.8)
    assert spreads["median of 5 block means"]["kernel"] == 0.0  # the burst spoils one block of five
    with pytest.raises(ValueError, match="two evaluations"):
        bench.task_spreads({"task": "t", "kernel_ms_samples": [steady], "ref_ms_samples": [steady]})
    smi = tmp_path / "smi.csv"
    smi.write_text(
        "timestamp, clocks.current.sm [MHz], power.draw [W], clocks_event_reasons.active\n"
        "t0, 345 MHz, 80.0 W, 0x0000000000000001\n"
        "t1, 1980 MHz, 300.5 W, 0x0000000000000000\n"
        "t2, 1710 MHz, 650.0 W, 0x0000000000000004\n"
        "t3, 1800 MHz, 640.0 W, 0x0000000000000004\n"
    )
    summary = bench.smi_summary(smi)
    assert (summary["busy"], summary["power_capped"], summary["capped_sm_mhz"]) == (3, 2, (1710.0, 1800.0))
    assert summary["uncapped_sm_mhz"] == [1980.0] and summary["max_power_w"] == 650.0
    # the committed H200 samples render
    results = ROOT / "bench" / "results"
    text = bench.render(json.loads((results / "gpu_evaluator_h200_samples.json").read_text()), "x", None)
    assert "| core/L1/transpose | 6 | trimmed mean" in text


def test_gpu_redteam_replays_labelled_files_and_flags_mismatches(tmp_path) -> None:
    bench = _load_script("gpu_redteam")
    assert bench.labels(ROOT / "tests" / "evaluation" / "redteam" / "legit_autotune.py")["expected"] == "none"
    cases = bench.load_cases(None)
    assert len(cases) >= 150 and all(case.expected for case in cases)
    on_cuda = {c.path.name: {e.value for e in c.expected} for c in bench.load_cases("legit_constexpr_function", "cuda")}
    assert on_cuda == {"legit_constexpr_function_helper.py": {"none", "compile_error"}}
    third_party = [c for c in cases if "third_party" in str(c.path)]
    assert third_party and all(c.task.id.startswith("file/") for c in third_party)
    out = tmp_path / "redteam.md"
    # two files on the interpreter: a legitimate autotuned kernel and a PyTorch fallback
    assert (
        bench.main(["--backend", "interpreter", "--only", "legit_autotune", "--workers", "1", "--out", str(out)]) == 0
    )
    data = json.loads(out.with_suffix(".json").read_text())
    assert [r["got"] for r in data["rows"]] == ["none"] and "1 files; 1 got an allowed verdict" in out.read_text()
    # a verdict outside the label is listed, a passing cheat counted as such
    case = cases[0]
    fake = type("R", (), {"error_type": bench.ErrorType.NONE, "correct": True, "error_message": "", "speedup": 1.0})
    rows = bench.verdicts([case], [fake])
    assert rows[0]["cheat_passed"] == (bench.ErrorType.NONE not in case.expected) and not rows[0]["ok"]
    text = bench.render(rows, {**data["meta"], "seconds": 1.0})
    assert "1 cheats or broken kernels came back correct" in text and case.path.name in text


def test_gpu_early_exit_gets_each_kinds_verdict_on_the_interpreter(tmp_path) -> None:
    out = tmp_path / "early.md"
    proc = _run_gpu_script("bench/gpu_early_exit.py", "--backend", "interpreter", "--n", "1", "--out", str(out))
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]  # exit 1: a kind got another verdict
    rows = {row["kind"]: row for row in json.loads(out.with_suffix(".json").read_text())["rows"]}
    assert set(rows) == {"correct", "compile_error", "call_error", "wrong_output"}
    assert rows["wrong_output"]["expected"] == "value_mismatch" and not rows["wrong_output"]["unexpected"]
    assert rows["correct"]["median_parts_s"]["correctness"] > 0
    assert "| call_error | runtime_error | 1 |" in out.read_text()


def test_gpu_early_exit_candidates_differ_from_the_solution_each_time() -> None:
    early = _load_script("gpu_early_exit")
    solution = "x = tl.maximum(x, 0.0)\nrelu_kernel[grid](x, out, n, BLOCK_SIZE=BLOCK_SIZE)\n"
    texts = {early.candidate(solution, kind, i) for kind in early.KINDS for i in range(2)}
    assert len(texts) == 2 * len(early.KINDS)  # no two requests share a cache key
    assert "tl.maximum(x)" in early.candidate(solution, "compile_error", 0)
    with pytest.raises(SystemExit, match="update KINDS"):
        early.candidate("nothing to replace", "wrong_output", 0)


def test_judge_verdicts_agree_between_judge_modes_on_the_interpreter(tmp_path) -> None:
    out = tmp_path / "verdicts.json"
    proc = _run_gpu_script(
        "bench/gpu_judge_verdicts.py", "--backend", "interpreter", "--modes", "zygote,reference", "--out", str(out)
    )
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    report = json.loads(out.read_text())
    assert report["agree"] is True
    verdicts = report["results"]["reference"]
    assert verdicts["correct"].startswith("none passed=5")
    assert verdicts["constant"].startswith("input_independent") and verdicts["wrong_shape"].startswith("shape_mismatch")


def test_bench_judge_compares_two_judge_modes_of_one_tree(tmp_path) -> None:
    out = tmp_path / "modes"
    proc = _run_gpu_script(
        "bench/bench_judge.py",
        *("--base", str(ROOT), "--base-judge", "zygote", "--judge", "reference", "--backend", "interpreter"),
        *("--relu", "1", "--suite-tasks", "0", "--rounds", "1", "--out", str(out)),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = out.with_suffix(".md").read_text()
    assert "--base-judge zygote --judge reference" in text
    runs = json.loads(out.with_suffix(".json").read_text())
    assert all(r["ok"] and r["stages"] for name in ("base", "judge") for r in runs[name][0]["relu"])


def test_context_probe_reads_each_mode_against_the_idle_rounds() -> None:
    probe = _load_script("gpu_context_probe")
    calls = {"idle": [1.0] * 9 + [5.0], "context": [1.0] * 10, "kernels": [1.5] * 10}
    samples = [
        {"mode": mode, "times": {"w": list(times)}, "host": {"w": [0.2] * len(times)}}
        for mode, times in calls.items()
        for _ in range(2)
    ]
    # the modes this run did not sample (context_warm, cpu) are left out of the table
    lines = probe.summarise({"samples": samples})
    rows = {line.split(" | ")[0].strip("| "): line for line in lines if line.startswith("| ") and " w " in line}
    assert "+0.00%" in rows["context"]  # the trimmed mean drops the idle rounds' one outlier
    assert "+50.00%" in rows["kernels"]
    assert any("1.0000-1.0000 ms (0.00% apart)" in line for line in lines)
    starts = {
        "concurrent_2": [
            {"start": 0.0, "end": 0.5, "init_s": 0.1, "context_s": 0.4},
            {"start": 0.0, "end": 0.9, "init_s": 0.1, "context_s": 0.8},
        ],
        "broken": [{"error": "RuntimeError('no device')"}],
    }
    table = probe.start_table(starts)
    assert "| concurrent_2 | 2 | 0.700 | - | 0.900 |" in table
    assert "| broken | 1 | failed | - | nan |" in table


def test_quiet_probe_runs_every_part_on_the_cpu(tmp_path) -> None:
    import os

    env = {**os.environ, "TRITON_INTERPRET": "1"}
    args = ["--dry", "--rounds", "1", "--calls", "2", "--timers", "1", "--out-dir", str(tmp_path)]
    command = [sys.executable, "-c", RUNNER, "bench/gpu_quiet_probe.py", *args]
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    samples = json.loads((tmp_path / "quiet_probe.json").read_text())["samples"]
    seen = {(s["part"], s["mode"]) for s in samples}
    assert seen == {("A", m) for m in ("idle", "churn", "alloc_free", "stopped", "kernels")} | {
        ("B", "wide"),
        ("B", "narrow"),
        ("C", "empty"),
        ("C", "crowded"),
    }
    works = {f"{t}:{w}" for t in ("transpose", "attention", "causal_softmax") for w in ("ref", "new")}
    assert all(set(s["times"]) == works and all(len(v) >= 2 for v in s["times"].values()) for s in samples)
    text = (tmp_path / "quiet_probe.md").read_text()
    assert "## A:" in text and "## B:" in text and "## C:" in text


def test_quiet_probe_reads_each_mode_against_its_base() -> None:
    probe = _load_script("gpu_quiet_probe")
    samples = [
        {"part": "A", "mode": mode, "times": {"w:ref": list(times)}}
        for mode, times in {"idle": [2.0] * 9 + [9.0], "churn": [2.1] * 10}.items()
        for _ in range(2)
    ]
    rows = [line for line in probe.table(samples, "A", ["idle", "churn"], "idle") if line.startswith("| w:ref")]
    assert len(rows) == 2 and "+0.00%" in rows[0]
    assert "+5.00%" in rows[1] and "2.100, 2.100" in rows[1]  # the idle rounds' outlier trimmed


def test_honest_seeds_counts_passes_strays_and_failures(tmp_path) -> None:
    out = tmp_path / "honest.md"
    args = ("--backend", "interpreter", "--dry", "--seeds", "2", "--out", str(out))
    proc = _run_gpu_script("bench/gpu_honest_seeds.py", *args)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]  # exit 1: an honest kernel failed
    report = json.loads(out.with_suffix(".json").read_text())
    seen = [(r["task"], r["seed"], r["ok"]) for r in report["rows"]]
    assert seen == [("core/L1/relu", 1, True), ("core/L1/relu", 2, True)]
    assert "| core/L1/relu | 2 | 2 | 0 | 0 |" in out.read_text()
    honest = _load_script("gpu_honest_seeds")
    rows = [
        {"task": "t", "seed": 1, "ok": True, "strays": "3", "error_type": "none", "error": ""},
        {"task": "t", "seed": 2, "ok": False, "strays": "", "error_type": "value_mismatch", "error": "trial 2"},
    ]
    entry = honest.summary(rows)["t"]
    assert (entry["runs"], entry["passed"], entry["with_strays"]) == (2, 1, 1)
    assert entry["failures"] == ["seed 2: value_mismatch: trial 2"]
