"""Evaluator on a GPU (cuda backend): reference solutions, speedup stability, warm pool vs fresh process.

Part 1 -- every bundled reference solution is evaluated ``--repeats`` times (default 5) with the
full shape profile; the table gives correctness, the median speedup over the PyTorch reference
and its spread ((max - min) / median) per task.

Part 2 -- the issue's reference point: a Triton ReLU on a 4096 x 16384 fp32 tensor (5 correctness
trials, 100 timed trials per model), evaluated by the warm pool and by a fresh Python process per
evaluation (KernelBench style: a new interpreter imports torch and triton, initialises CUDA and
runs the same checks). Both sides start from the same warm Triton driver cache and compile the
candidate kernel themselves, so the difference is process start, imports and CUDA set-up.

Runs without gymnasium (the evaluator does not need it). Writes a markdown table (date, GPU,
torch and triton versions) and the raw numbers as JSON:

    python bench/gpu_evaluator.py                         # cuda, writes $OUT/gpu_evaluator.md if $OUT is set
    python bench/gpu_evaluator.py --out bench/results/gpu_evaluator_h200.md
    python bench/gpu_evaluator.py --backend interpreter --dry-run     # CPU smoke test of this script

Each task's rows are written as soon as its repeats finish, so a run cut short by a time limit
keeps what it measured. Runs split to fit a limit (``--levels 1,2`` then ``--levels 3
--skip-relu``) are merged into one report, a later run's row replacing an earlier one:

    python bench/gpu_evaluator.py --merge run_l12.json run_l3.json --out bench/results/gpu_evaluator_h200.md
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import pickle
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import _bootstrap  # noqa: E402, F401  (before the package: works without gymnasium)
from _benchutil import package_versions  # noqa: E402

from ascend_kernel_gym.evaluation import EvalRequest, EvalResult, Evaluator  # noqa: E402
from ascend_kernel_gym.evaluation.job import Job  # noqa: E402
from ascend_kernel_gym.evaluation.static import check_source  # noqa: E402
from ascend_kernel_gym.tasks import get_task, load_suite  # noqa: E402

RELU_ID = "core/L1/relu"

FRESH_SCRIPT = r"""
import os, pickle, sys, types
root, backend, warm_dir = sys.argv[1], sys.argv[2], sys.argv[3]
if backend == "interpreter":
    os.environ["TRITON_INTERPRET"] = "1"
sys.path.insert(0, root)
pkg = types.ModuleType("ascend_kernel_gym"); pkg.__path__ = [os.path.join(root, "ascend_kernel_gym")]
pkg.__version__ = "bench"; sys.modules["ascend_kernel_gym"] = pkg
import torch, triton  # noqa: F401  (what every fresh harness process pays)
job = pickle.loads(sys.stdin.buffer.read())
if warm_dir == "-":
    sys.exit(0)
if warm_dir.startswith("prepare:"):
    os.environ["TRITON_CACHE_DIR"] = warm_dir[len("prepare:"):]
    from ascend_kernel_gym.evaluation import warmup
    warmup.run_device_warmup(backend)
    sys.exit(0)
job.warm_cache = warm_dir or None
from ascend_kernel_gym.evaluation.child import child_main
child_main(job, os.dup(1), "fresh")
"""


def _progress(items: list[Any], desc: str) -> Any:
    try:
        from tqdm import tqdm

        return tqdm(items, desc=desc)
    except ImportError:
        print(f"{desc}: {len(items)} items", flush=True)
        return items


def _variant(code: str, tag: str) -> str:
    return f"{code}\n# {tag}\n"  # distinct code: the result cache cannot answer


def _device_name(backend: str) -> str:
    if backend == "cuda":
        import torch

        return f"{torch.cuda.get_device_name(0)} x{torch.cuda.device_count()}"
    return f"CPU ({platform.machine()}, {os.cpu_count()} cores, Triton interpreter)"


# --- part 1: reference solutions ------------------------------------------------------------------


def bench_solutions(ev: Evaluator, tasks: list[Any], repeats: int, profile: str | None) -> list[dict[str, Any]]:
    requests, owners = [], []
    for task in tasks:
        code = task.solution_source() or ""
        for r in range(repeats):
            requests.append(EvalRequest(task=task, code=_variant(code, f"repeat {r}"), profile=profile))
            owners.append(task.id)
    results: list[EvalResult] = []
    batch = max(1, ev.workers)
    for start in range(0, len(requests), batch):
        results.extend(ev.evaluate_many(requests[start : start + batch]))
    rows = []
    for task in tasks:
        mine = [res for owner, res in zip(owners, results, strict=True) if owner == task.id]
        speedups = [r.speedup for r in mine if r.ok and r.speedup is not None]
        row: dict[str, Any] = {
            "task": task.id,
            "correct": sum(r.ok for r in mine),
            "runs": len(mine),
            "errors": sorted({f"{r.error_type.value}: {r.error_message[:160]}" for r in mine if not r.ok}),
            "speedups": speedups,
            "ref_ms": [r.ref_ms for r in mine if r.ref_ms is not None],
            "kernel_ms": [r.kernel_ms for r in mine if r.kernel_ms is not None],
            "wall_s": [r.stage_durations.get("total", 0.0) for r in mine],
            # how long each evaluation waited for the worker's other children before timing
            "quiet_wait_s": [r.timing.get("quiet_wait_s") for r in mine if r.timing],
            # the median and quartiles of each evaluation's timed calls (its time is their trimmed mean)
            "ref_ms_quartiles": [_quartiles(r.timing, "ref") for r in mine if r.timing],
            "kernel_ms_quartiles": [_quartiles(r.timing, "kernel") for r in mine if r.timing],
            "arena_slack_bytes": [r.timing.get("arena_slack_bytes") for r in mine if r.timing],
            "local_memory_moves": [r.timing.get("local_memory_moves") for r in mine if r.timing],
            "phase_s": [r.timing.get("phase_s") for r in mine if r.timing],
            "ref_ms_samples": [r.timing.get("ref_ms_samples") for r in mine if r.timing],
            "kernel_ms_samples": [r.timing.get("kernel_ms_samples") for r in mine if r.timing],
            "warnings": sorted({w for r in mine for w in r.warnings if "implausible" in w or "floor" in w}),
        }
        if speedups:
            med = statistics.median(speedups)
            row["speedup_median"] = med
            row["speedup_spread_pct"] = 100.0 * (max(speedups) - min(speedups)) / med if med else None
        rows.append(row)
    return rows


def _quartiles(timing: dict[str, Any], which: str) -> list[float | None]:
    return [timing.get(f"{which}_ms_{q}") for q in ("p25", "median", "p75")]


# --- part 2: warm pool vs fresh process -------------------------------------------------------------


def _job_for(task: Any, code: str, backend: str, profile: str, sandbox: str, reps: int) -> Job:
    report = check_source(code)
    return Job(
        task=task,
        code=code,
        code_hash=hashlib.sha256(code.encode()).hexdigest(),
        backend=backend,
        profile=profile,
        num_trials=5,
        measure_performance=True,
        sandbox=sandbox,
        profile_reps=reps,
        static_warnings=list(report.warnings),
        kernels=list(report.kernels),
        memory_mb=0,
    )


def _fresh_env(backend: str) -> dict[str, str]:
    keep = ("PATH", "HOME", "LANG", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_HOME", "TRITON_PTXAS_PATH")
    env = {k: v for k, v in os.environ.items() if k in keep}
    if backend == "interpreter":
        env["TRITON_INTERPRET"] = "1"
    else:
        env.setdefault("CUDA_VISIBLE_DEVICES", "0")
    return env


def bench_relu(ev: Evaluator, backend: str, profile: str, n: int, reps: int) -> dict[str, Any]:
    task = get_task(RELU_ID)
    code = task.solution_source() or ""
    warm_walls, warm_results = [], []
    ev.evaluate(EvalRequest(task=task, code=_variant(code, "warm-up"), profile=profile))
    for i in _progress(list(range(n)), "relu: warm pool"):
        start = time.perf_counter()
        result = ev.evaluate(EvalRequest(task=task, code=_variant(code, f"warm {i}"), profile=profile))
        warm_walls.append(time.perf_counter() - start)
        warm_results.append(result)

    env = _fresh_env(backend)
    tmp = tempfile.mkdtemp(prefix="akg-bench-fresh-")
    warm_dir = ""
    if backend != "interpreter":  # same warm Triton driver cache as the pool's children get
        warm_dir = os.path.join(tmp, "warm_cache")
        os.makedirs(warm_dir)
        subprocess.run(
            [sys.executable, "-c", FRESH_SCRIPT, str(ROOT), backend, "prepare:" + warm_dir],
            input=pickle.dumps(None),
            env=env,
            check=True,
            timeout=600,
        )
    # What the imports alone cost in a fresh process (for the table).
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", FRESH_SCRIPT, str(ROOT), backend, "-"], input=pickle.dumps(None), env=env, check=True
    )
    import_s = time.perf_counter() - start
    fresh_walls, fresh_results = [], []
    for i in _progress(list(range(n)), "relu: fresh process"):
        sandbox = tempfile.mkdtemp(prefix="akg-sandbox-", dir=tmp)
        job = _job_for(task, _variant(code, f"fresh {i}"), backend, profile, sandbox, reps)
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-c", FRESH_SCRIPT, str(ROOT), backend, warm_dir],
            input=pickle.dumps(job),
            capture_output=True,
            env=env,
            timeout=600,
        )
        fresh_walls.append(time.perf_counter() - start)
        try:
            data = json.loads(proc.stdout[8:])["result"]
            fresh_results.append(EvalResult.from_dict(data))
        except (ValueError, KeyError) as exc:
            raise RuntimeError(f"fresh evaluation produced no result: {exc}; stderr: {proc.stderr[-2000:]!r}") from None
    return {
        "task": RELU_ID,
        "profile": profile,
        "warm_walls": warm_walls,
        "fresh_walls": fresh_walls,
        "fresh_import_s": import_s,
        "warm_ok": [r.ok for r in warm_results],
        "fresh_ok": [r.ok for r in fresh_results],
        "warm_errors": [r.error_message[:200] for r in warm_results if not r.ok],
        "fresh_errors": [r.error_message[:200] for r in fresh_results if not r.ok],
        "warm_speedups": [r.speedup for r in warm_results],
        "warm_stage_durations": [r.stage_durations for r in warm_results],
        "warm_timing_phases": [_phases(r) for r in warm_results],
        "fresh_speedups": [r.speedup for r in fresh_results],
    }


def _phases(result: EvalResult) -> dict[str, float]:
    """The timing stage's parts, and first how long it waited for a quiet device."""
    timing = result.timing or {}
    phases = {"quiet_wait": timing["quiet_wait_s"]} if "quiet_wait_s" in timing else {}
    return {**phases, **timing.get("phase_s", {})}


# --- report ---------------------------------------------------------------------------------------------


def _fmt(value: float | None, pattern: str = "{:.3f}") -> str:
    return "-" if value is None else pattern.format(value)


def _distinct(messages: list[str]) -> list[str]:
    """One message per wording: repeats that differ only in their numbers (17.9x, 18.0x) show once."""
    first: dict[str, str] = {}
    for message in messages:
        first.setdefault(re.sub(r"\d+(\.\d+)?", "#", message), message)
    return list(first.values())


def _phase_table(phases: list[dict[str, float]]) -> list[str]:
    """The timing stage's own parts (median seconds), where the runs recorded them."""
    if not any(phases):
        return []
    return [
        "Inside `profile` (median seconds): `quiet_wait`: waiting for a quiet device (the worker's "
        "spare child still setting up its device; no timing while it does); `setup`: the first input "
        "set, the reference's first output and the arenas; `warmup`: warm-up calls; `rounds`: the timed "
        "rounds with everything between their calls, of which `inputs` drew the fresh input sets and "
        "`checks` checked the 15 checked and audited rounds; of `checks`: `reference_reruns` ran the "
        "reference again on the round's inputs, `audit_calls` the recorded candidate calls of the "
        "audits, `compare` the output comparisons (the rest: snapshot checks and output copies):",
        "",
        "| part | seconds |",
        "|---|---|",
        *(f"| {key} | {value:.3f} |" for key, value in _median_durations([p for p in phases if p]).items()),
        "",
    ]


def _median_durations(durations: list[dict[str, float]]) -> dict[str, float]:
    keys = [key for key in durations[0]] if durations else []
    return {key: statistics.median(d.get(key, 0.0) for d in durations) for key in keys}


def render(meta: dict[str, Any], rows: list[dict[str, Any]], relu: dict[str, Any] | None) -> str:
    lines = [
        f"# Evaluator on {meta['backend']}: reference solutions and warm pool vs fresh process",
        "",
        f"- date: {meta['date']}",
        f"- device: {meta['device']}",
        f"- versions: {', '.join(f'{k} {v}' for k, v in meta['versions'].items())}, Python {meta['python']}",
        *(
            [f"- command: `{meta['command']}`"]
            if "merged" not in meta
            else ["- merged from these runs (a later run's row replaces an earlier one for the same task):"]
            + [
                f"  - {run['date']}: `{run['command']}` ({', '.join(run['tasks']) or 'relu only'})"
                for run in meta["merged"]
            ]
        ),
        f"- workers: {meta['workers']} (one per GPU), timed repetitions per model: {meta['reps']}, "
        f"repeats per task: {meta['repeats']}, profile: {meta['profile'] or 'default'}",
        "- zygotes: " + ", ".join(json.dumps(info, sort_keys=True) for info in meta["zygotes"]),
        "",
        "## Reference solutions",
        "",
        "| task | correct | speedup (median) | spread | ref ms (median) | kernel ms (median) | wall s (median) "
        "| notes |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        spread = row.get("speedup_spread_pct")
        notes = "; ".join(row["errors"] + _distinct(row["warnings"]))[:200].replace("|", "/")
        lines.append(
            "| {task} | {ok}/{runs} | {sp} | {spread} | {ref} | {ker} | {wall} | {notes} |".format(
                task=row["task"],
                ok=row["correct"],
                runs=row["runs"],
                sp=_fmt(row.get("speedup_median"), "{:.3f}x"),
                spread=_fmt(spread, "{:.1f}%") + (" (>3%)" if spread is not None and spread > 3 else ""),
                ref=_fmt(statistics.median(row["ref_ms"]) if row["ref_ms"] else None, "{:.4f}"),
                ker=_fmt(statistics.median(row["kernel_ms"]) if row["kernel_ms"] else None, "{:.4f}"),
                wall=_fmt(statistics.median(row["wall_s"]) if row["wall_s"] else None, "{:.2f}"),
                notes=notes,
            )
        )
    correct_tasks = sum(1 for row in rows if row["correct"] == row["runs"])
    spreads = [row["speedup_spread_pct"] for row in rows if row.get("speedup_spread_pct") is not None]
    lines += [
        "",
        f"{correct_tasks}/{len(rows)} tasks correct in every run; "
        + (f"speedup spread median {statistics.median(spreads):.1f}%, max {max(spreads):.1f}%, " if spreads else "")
        + f"{sum(1 for s in spreads if s <= 3)}/{len(spreads)} tasks within 3%.",
    ]
    if relu is not None:
        warm, fresh = statistics.median(relu["warm_walls"]), statistics.median(relu["fresh_walls"])
        lines += [
            "",
            f"## {relu['task']} ({relu['profile']} profile): one evaluation, wall seconds",
            "",
            f"5 correctness trials and {meta['reps']} timed trials per model in both cases; median of "
            f"{len(relu['warm_walls'])} evaluations each.",
            "",
            "| harness | median wall s | min | max | all correct |",
            "|---|---|---|---|---|",
            f"| fresh Python process per evaluation | {fresh:.2f} | {min(relu['fresh_walls']):.2f} | "
            f"{max(relu['fresh_walls']):.2f} | {all(relu['fresh_ok'])} |",
            f"| warm pool (fork per evaluation) | {warm:.2f} | {min(relu['warm_walls']):.2f} | "
            f"{max(relu['warm_walls']):.2f} | {all(relu['warm_ok'])} |",
            "",
            "Where a warm-pool evaluation's time goes (median seconds over the runs). `ahead.*`: done by the "
            "worker's spare child before the job arrived, while the previous evaluation ran (not part of this "
            "evaluation's time); `compile.waited`: how long the job still waited for it; `compile.*`: parts of "
            "`compile`; `child_wall`: job handed to the child until its result arrived; `total`: the whole "
            "`evaluate` call:",
            "",
            "| part | seconds |",
            "|---|---|",
            *(f"| {key} | {value:.3f} |" for key, value in _median_durations(relu["warm_stage_durations"]).items()),
            "",
            *_phase_table(relu.get("warm_timing_phases") or []),
            f"Warm pool is {fresh / warm:.1f}x faster per evaluation; importing torch + triton alone takes "
            f"{relu['fresh_import_s']:.2f} s in a fresh process. Target: <= 1 s per evaluation with the warm pool "
            "(issue 3; reference point: 8.4-11.5 s for a KernelBench-style fresh-process evaluation on an H200).",
        ]
    return "\n".join(lines) + "\n"


def _write(
    out: Path, meta: dict[str, Any], rows: list[dict[str, Any]], relu: dict[str, Any] | None, started: float
) -> str:
    meta["elapsed_s"] = round(time.time() - started, 1)
    text = render(meta, rows, relu)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    out.with_suffix(".json").write_text(json.dumps({"meta": meta, "solutions": rows, "relu": relu}, indent=2))
    return text


def merge(paths: list[Path], out: Path) -> str:
    """One report from several runs' JSON files (e.g. a run per level that each fit a time limit)."""
    runs = [json.loads(path.read_text()) for path in paths]
    rows: dict[str, dict[str, Any]] = {}
    relu = None
    for run in runs:
        rows.update({row["task"]: row for row in run["solutions"]})
        relu = run.get("relu") or relu
    meta = dict(runs[0]["meta"])
    meta["merged"] = [
        {"date": run["meta"]["date"], "command": run["meta"]["command"], "tasks": [r["task"] for r in run["solutions"]]}
        for run in runs
    ]
    meta["zygotes"] = [z for run in runs for z in run["meta"]["zygotes"]]
    ordered = [rows[task] for task in sorted(rows)]
    text = render(meta, ordered, relu)
    out.write_text(text)
    out.with_suffix(".json").write_text(json.dumps({"meta": meta, "solutions": ordered, "relu": relu}, indent=2))
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="cuda", choices=("cuda", "npu", "interpreter"))
    parser.add_argument("--repeats", type=int, default=5, help="evaluations per task (default 5)")
    parser.add_argument("--relu-runs", type=int, default=5, help="evaluations per side in part 2 (default 5)")
    parser.add_argument("--reps", type=int, default=100, help="timed repetitions per model (default 100)")
    parser.add_argument("--tasks", default=None, help="comma-separated task ids (default: all with solutions)")
    parser.add_argument("--levels", default=None, help="comma-separated levels, e.g. 1 or 2,3 (default: all)")
    parser.add_argument("--skip-solutions", action="store_true", help="only part 2")
    parser.add_argument("--skip-relu", action="store_true", help="only part 1")
    parser.add_argument("--workers", type=int, default=None, help="default: one per visible GPU")
    parser.add_argument(
        "--no-prefork", action="store_true", help="no spare child per worker (each child starts when its job comes)"
    )
    parser.add_argument("--dry-run", action="store_true", help="tiny run (3 tasks, 2 repeats, small shapes)")
    parser.add_argument("--out", type=Path, default=None, help="markdown output (default: $OUT/gpu_evaluator.md)")
    parser.add_argument("--merge", type=Path, nargs="+", default=None, help="merge these runs' .json files into --out")
    args = parser.parse_args(argv)
    if args.merge:
        if args.out is None:
            parser.error("--merge needs --out")
        print(merge(args.merge, args.out))
        return 0

    profile = None
    if args.dry_run:
        args.repeats, args.relu_runs, args.reps = min(args.repeats, 2), min(args.relu_runs, 1), min(args.reps, 5)
        if args.tasks is None:
            args.tasks = "core/L1/relu,core/L1/softmax,core/L2/linear_gelu"
    if args.backend == "interpreter":
        profile = "small"
    tasks = [t for t in load_suite("core") if t.solution_path is not None]
    if args.tasks:
        wanted = [s.strip() for s in args.tasks.split(",") if s.strip()]
        tasks = [t for t in tasks if t.id in wanted]
    if args.levels:
        levels = {int(s) for s in args.levels.split(",") if s.strip()}
        tasks = [t for t in tasks if t.level in levels]
    out = args.out
    if out is None:
        base = os.environ.get("OUT")
        out = (
            Path(base) / "gpu_evaluator.md" if base else ROOT / "bench" / "results" / f"gpu_evaluator_{args.backend}.md"
        )

    started = time.time()
    with Evaluator(
        backend=args.backend,
        workers=args.workers,
        cache=False,
        profile_reps=args.reps,
        ascend_checks="off",
        prefork=not args.no_prefork,
    ) as ev:
        ev.warm_up()
        meta = {
            "backend": ev.backend,
            "date": dt.datetime.now().isoformat(timespec="seconds"),
            "device": _device_name(ev.backend),
            "versions": package_versions(),
            "python": platform.python_version(),
            "command": "python " + " ".join([os.path.relpath(__file__, ROOT), *(argv or sys.argv[1:])]),
            "workers": ev.workers,
            "reps": args.reps,
            "repeats": args.repeats,
            "profile": profile,
            "zygotes": [h.info for h in ev._handles],
        }
        print(json.dumps(meta, indent=2), flush=True)
        rows: list[dict[str, Any]] = []
        relu = None
        if not args.skip_relu:
            relu = bench_relu(ev, ev.backend, profile or "full", args.relu_runs, args.reps)
            _write(out, meta, rows, relu, started)
        if not args.skip_solutions:
            for task in _progress(tasks, "reference solutions"):
                rows.extend(bench_solutions(ev, [task], args.repeats, profile))
                _write(out, meta, rows, relu, started)  # partial results survive a time limit
    text = _write(out, meta, rows, relu, started)
    print(text)
    print(f"wrote {out} and {out.with_suffix('.json')} in {meta['elapsed_s']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
