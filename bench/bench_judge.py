"""What the trusted judge costs: evaluation latency and throughput, this tree against another.

    python bench/bench_judge.py --base PATH [--backend interpreter|cuda] [--relu 12] [--rounds 2]
                                [--suite-tasks 45] [--out bench/results/judge_cpu]

``PATH`` is a copy of the package tree before the judge (e.g. a ``git worktree`` of the commit
before it). Each round starts one fresh single-worker pool per tree, in alternating order, each in
its own Python process (the two trees cannot share one): after the pool is warm it evaluates the
core relu solution ``--relu`` times (warm latency; the first call is left out) and then each
bundled reference solution once (the first ``--suite-tasks`` of the core suite; latency per
evaluation and throughput). Cache off, fixed seeds, the backend's default profile. Reports
medians per tree, the ratio new / base in the same run, and whether the verdicts agree.
Runs without gymnasium (GPU images).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _bootstrap(root: str) -> None:
    """Import the package of ``root`` (a bare package module when gymnasium is missing)."""
    sys.path.insert(0, root)
    try:
        import gymnasium  # noqa: F401
    except ImportError:
        init = Path(root, "ascend_kernel_gym", "__init__.py").read_text()
        match = re.search(r'__version__\s*=\s*"([^"]+)"', init)
        pkg = types.ModuleType("ascend_kernel_gym")
        pkg.__path__ = [str(Path(root, "ascend_kernel_gym"))]  # type: ignore[attr-defined]
        pkg.__version__ = match.group(1) if match else "0"  # type: ignore[attr-defined]
        sys.modules["ascend_kernel_gym"] = pkg


def worker(root: str, backend: str, relu: int, suite_tasks: int) -> dict[str, Any]:
    """One tree, one fresh pool: warm relu latencies, then one pass over the reference solutions."""
    _bootstrap(root)
    from ascend_kernel_gym.evaluation import EvalRequest, Evaluator
    from ascend_kernel_gym.tasks import get_task, load_suite

    package = sys.modules["ascend_kernel_gym"]
    where = getattr(package, "__file__", None) or next(iter(package.__path__))
    assert Path(where).resolve().is_relative_to(Path(root).resolve()), where
    relu_task = get_task("core/L1/relu")
    relu_code = relu_task.solution_source() or ""
    tasks = [t for t in load_suite("core") if t.solution_source()][:suite_tasks]
    out: dict[str, Any] = {"relu": [], "suite": []}
    with Evaluator(backend=backend, workers=1, cache=False, timeout_s=600) as ev:
        ev.warm_up()
        for i in range(relu + 1):
            started = time.perf_counter()
            result = ev.evaluate(EvalRequest(task=relu_task, code=relu_code + f"\n# {i}\n", seed=i))
            if i:  # the first call after the warm-up is left out
                out["relu"].append(
                    {
                        "s": time.perf_counter() - started,
                        "ok": result.ok,
                        "speedup": result.speedup,
                        "error": result.error_message[:300],
                        # where the time went: the stages, and inside timing its parts
                        "stages": result.stage_durations,
                        "timing_phases": result.timing.get("phase_s"),
                        "quiet_wait_s": result.timing.get("quiet_wait_s"),
                    }
                )
        started_all = time.perf_counter()
        for task in tasks:
            started = time.perf_counter()
            result = ev.evaluate(EvalRequest(task=task, code=task.solution_source() or "", seed=7))
            out["suite"].append(
                row := {
                    "task": task.id,
                    "s": time.perf_counter() - started,
                    "ok": result.ok,
                    "error_type": result.error_type.value,
                    "error": result.error_message[:300],
                    "speedup": result.speedup,
                    "cross_check": result.timing.get("cross_check"),
                }
            )
            print(json.dumps(row), file=sys.stderr, flush=True)  # progress: survives a run cut short
        out["suite_wall_s"] = time.perf_counter() - started_all
    return out


def _run_worker(root: str, args: argparse.Namespace, judge_mode: str = "") -> dict[str, Any]:
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--worker",
        root,
        "--backend",
        args.backend,
        "--relu",
        str(args.relu),
        "--suite-tasks",
        str(args.suite_tasks),
    ]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if judge_mode:
        env["AKG_JUDGE"] = judge_mode
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False, cwd=root)
    if done.returncode != 0:
        raise SystemExit(f"worker for {root} failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", help="the package tree to compare against")
    parser.add_argument("--backend", default="interpreter", choices=["interpreter", "cuda", "npu"])
    parser.add_argument("--relu", type=int, default=12)
    parser.add_argument("--suite-tasks", type=int, default=45)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--first", choices=["base", "judge"], default="base", help="which tree runs first in round 1")
    parser.add_argument("--out", default=None, help="write OUT.md and OUT.json")
    parser.add_argument(
        "--base-judge", default="", help="AKG_JUDGE for the base tree's pool, e.g. 'child' (--base . compares modes)"
    )
    parser.add_argument("--judge", default="", help="AKG_JUDGE for this tree's pool (default: the backend's)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.backend, args.relu, args.suite_tasks)))
        return
    if not args.base or not Path(args.base, "ascend_kernel_gym").is_dir():
        parser.error("--base must be a package tree (a directory holding ascend_kernel_gym/)")
    trees = {"base": str(Path(args.base).resolve()), "judge": str(ROOT)}
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
    for round_index in range(args.rounds):
        order = list(trees) if round_index % 2 == 0 else list(reversed(trees))
        if args.first == "judge":
            order.reverse()
        for name in order:
            print(f"round {round_index + 1}/{args.rounds}: {name} ...", file=sys.stderr, flush=True)
            runs[name].append(_run_worker(trees[name], args, args.base_judge if name == "base" else args.judge))
            if args.out:  # what is measured so far survives a run cut short
                Path(args.out).parent.mkdir(parents=True, exist_ok=True)
                Path(args.out + ".json").write_text(json.dumps(runs, indent=1))
    report = _report(runs, args)
    print(report)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out + ".md").write_text(report)
        Path(args.out + ".json").write_text(json.dumps(runs, indent=1))


def _report(runs: dict[str, list[dict[str, Any]]], args: argparse.Namespace) -> str:
    rows = {}
    for name, results in runs.items():
        relu = [r["s"] for run in results for r in run["relu"]]
        suite = [r["s"] for run in results for r in run["suite"]]
        walls = [run["suite_wall_s"] for run in results]
        count = len(results[0]["suite"]) if results else 0
        rows[name] = {
            "relu_p50": _median(relu),
            "relu_p90": sorted(relu)[int(0.9 * (len(relu) - 1))] if relu else float("nan"),
            "suite_p50": _median(suite),
            "per_min": 60 * count / _median(walls) if walls else float("nan"),
            "ok": sum(r["ok"] for r in results[-1]["suite"]) if results else 0,
            "count": count,
        }
    if not all(runs.values()):  # e.g. one tree per run, orders alternated across runs (merge the JSON)
        return "incomplete: " + json.dumps({k: len(v) for k, v in runs.items()}) + "\n"
    base, new = rows["base"], rows["judge"]

    def ratio(key: str) -> str:
        return f"{new[key] / base[key]:.2f}" if base[key] and base[key] == base[key] else "-"

    verdicts = {name: {r["task"]: (r["ok"], r["error_type"]) for r in runs[name][-1]["suite"]} for name in runs}
    differ = sorted(t for t in verdicts["base"] if verdicts["base"][t] != verdicts["judge"].get(t))
    checks = [r["cross_check"] for run in runs["judge"] for r in run["suite"] if r.get("cross_check")]
    lines = [
        "# The trusted judge: evaluation latency and throughput against the tree before it",
        "",
        f"Machine: {platform.node()} ({platform.machine()}, {os.cpu_count()} cores), Python "
        f"{platform.python_version()}, backend `{args.backend}`, {args.rounds} rounds (alternating order), "
        f"one single-worker pool per tree and round, cache off.",
        f"Command: `python bench/bench_judge.py --base BASE --backend {args.backend} --relu {args.relu} "
        f"--suite-tasks {args.suite_tasks} --rounds {args.rounds}"
        + (f" --base-judge {args.base_judge}" if args.base_judge else "")
        + (f" --judge {args.judge}" if args.judge else "")
        + "`",
        "",
        "| | base | judge | judge / base |",
        "|---|---|---|---|",
        f"| warm relu latency, median (s) | {base['relu_p50']:.3f} | {new['relu_p50']:.3f} | {ratio('relu_p50')} |",
        f"| warm relu latency, p90 (s) | {base['relu_p90']:.3f} | {new['relu_p90']:.3f} | {ratio('relu_p90')} |",
        f"| reference solutions: latency median (s) | {base['suite_p50']:.3f} | {new['suite_p50']:.3f} | "
        f"{ratio('suite_p50')} |",
        f"| reference solutions: evaluations / min | {base['per_min']:.1f} | {new['per_min']:.1f} | "
        f"{ratio('per_min')} |",
        f"| reference solutions correct | {base['ok']}/{base['count']} | {new['ok']}/{new['count']} | |",
        "",
        f"Verdicts that differ between the trees (last round): {', '.join(differ) or 'none'}.",
        f"Timing cross-checks recorded: {len(checks)}, failed: {sum(1 for c in checks if not c.get('ok'))}.",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
