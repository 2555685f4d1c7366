"""The Ray executor across the GPUs of one host (issue 25): throughput at 1, 2, ..., N GPUs, and an actor lost mid-run.

A local Ray instance on this host (started by the evaluator: Ray finds the GPUs), one pool actor per GPU
(``Evaluator(executor="ray", actors=k)``), and the burst of the concurrency bench
(``bench/gpu_concurrency.py``: every reference solution of the core suite and a broken variant of
each, full profile, cache off) repeated to about ``--requests`` requests. For each GPU count of
``--gpus`` it reports evaluations per minute, the scaling efficiency (throughput / (k x the
1-GPU throughput)), and the speedup of every correct solution, compared with the 1-GPU run (the
timings must agree within 3 %). Then, unless ``--no-kill``, it runs the burst on all GPUs again
and kills one actor (``ray.kill``) once a third of the requests are done: every request must come
back exactly once, in order, those of the lost actor marked ``retried:``; the throughput of the
minute around the kill against the run's own average is the dip.

    python bench/gpu_ray_scaling.py                       # cuda, all GPUs: bench/results/gpu_ray_scaling_h200.{md,json}
    python bench/gpu_ray_scaling.py --backend interpreter --dry --gpus 1,2 --out /tmp/r.md   # CPU smoke test

On the interpreter "GPUs" are CPU actors (one per count), which tests the script, not scaling.
Needs the ``ray`` extra.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import hashlib
import json
import os
import platform
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import _bootstrap  # noqa: E402, F401  (before the package: works without gymnasium)
from _benchutil import positive_ints  # noqa: E402
from gpu_concurrency import THRESHOLD, burst  # noqa: E402

from ascend_kernel_gym.evaluation import EvalResult, Evaluator  # noqa: E402
from ascend_kernel_gym.evaluation.concurrency import was_retried  # noqa: E402
from ascend_kernel_gym.tasks import load_suite  # noqa: E402

DRY_TASKS = ("core/L1/relu", "core/L1/softmax")
DEFAULT_OUT = ROOT / "bench" / "results" / "gpu_ray_scaling_h200.md"


def parse_counts(text: str) -> list[int]:
    return positive_ints(text, "--gpus")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="cuda", choices=("cuda", "npu", "interpreter"))
    parser.add_argument("--gpus", type=parse_counts, default=None, help="GPU counts (default: 1, 2, all)")
    parser.add_argument("--requests", type=int, default=400, help="about this many requests per run")
    parser.add_argument("--reps", type=int, default=100, help="timed repetitions per model")
    parser.add_argument("--no-kill", action="store_true", help="leave out the lost-actor run")
    parser.add_argument("--dry", action="store_true", help=f"tiny run: {', '.join(DRY_TASKS)}, small shapes, 5 reps")
    parser.add_argument("--out", type=Path, default=None, help="markdown output (default: $OUT or bench/results)")
    return parser


def repeated(items: list[dict[str, Any]], total: int) -> list[dict[str, Any]]:
    """``items`` repeated (each copy's code made distinct, so no request is served twice from a
    cache) until about ``total`` requests."""
    copies = max(1, round(total / max(1, len(items))))
    out = []
    for copy in range(copies):
        for item in items:
            request = item["request"]
            code = request.code if copy == 0 else request.code + f"\n# copy {copy}\n"
            out.append({**item, "copy": copy, "request": dataclasses.replace(request, code=code)})
    return out


def run_burst(
    ray: Any, items: list[dict[str, Any]], gpus: int, options: dict[str, Any], kill_after: int | None
) -> dict[str, Any]:
    """One burst over ``gpus`` pool actors; with ``kill_after``, one actor is killed once that many are done."""
    started = time.perf_counter()
    with Evaluator(executor="ray", address="ray://local", actors=gpus, cache=False, **options) as ev:
        ev.warm_up()
        warm_s = time.perf_counter() - started
        done_at: list[float] = []
        killed: dict[str, Any] = {}
        results: list[EvalResult] = []
        lock = threading.Lock()

        def watch(result: EvalResult) -> None:
            with lock:
                done_at.append(time.perf_counter())
                if kill_after is not None and len(done_at) == kill_after and not killed:
                    victim = next((m for m in ev._ray.members if m.in_flight and not m.dead), None)
                    if victim is not None:
                        killed.update(name=victim.name, at=time.perf_counter())
                        ray.kill(victim.handle, no_restart=True)

        begin = time.perf_counter()
        results = evaluate_all(ev, [item["request"] for item in items], watch)
        makespan = time.perf_counter() - begin
        replacements = ev._ray.stats.get("actor_replacements", 0)
    rows = [row_of(item, result) for item, result in zip(items, results, strict=True)]
    expected = [hashlib.sha256(item["request"].code.encode()).hexdigest() for item in items]
    run: dict[str, Any] = {
        "gpus": gpus,
        "requests": len(items),
        "warm_s": round(warm_s, 2),
        "makespan_s": round(makespan, 2),
        "eval_per_min": round(60 * len(items) / makespan, 2) if makespan > 0 else None,
        "one_result_each": [r.code_hash for r in results] == expected,
        "retried": sum(was_retried(r) for r in results),
        "replacements": replacements,
        "speedups": speedups(rows),
        "correct": sum(1 for r in rows if r["ok"]),
    }
    if killed:
        run["killed"] = killed["name"]
        run["dip"] = dip([t - begin for t in done_at], killed["at"] - begin, makespan)
    return run


def evaluate_all(ev: Evaluator, requests: list[Any], on_done: Any) -> list[EvalResult]:
    """``evaluate_many``'s contract (one result per request, in order) with a callback per result."""
    from concurrent.futures import ThreadPoolExecutor

    def one(request: Any) -> EvalResult:
        result = ev.evaluate(request)
        on_done(result)
        return result

    with ThreadPoolExecutor(max_workers=max(1, ev.workers)) as pool:
        return list(pool.map(one, requests))


def row_of(item: dict[str, Any], result: EvalResult) -> dict[str, Any]:
    return {"task": item["task"], "kind": item["kind"], "ok": result.ok, "speedup": result.speedup}


def speedups(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Median speedup of every correct solution (over its copies)."""
    seen: dict[str, list[float]] = {}
    for row in rows:
        if row["kind"] == "solution" and row["ok"] and row["speedup"]:
            seen.setdefault(row["task"], []).append(float(row["speedup"]))
    return {task: statistics.median(values) for task, values in seen.items()}


def dip(done_s: list[float], kill_s: float, makespan: float, window: float = 60.0) -> dict[str, Any]:
    """Completions per minute in the window after the kill against the run's average."""
    after = sum(1 for t in done_s if kill_s <= t < kill_s + window)
    span = min(window, makespan - kill_s)
    average = 60 * len(done_s) / makespan if makespan > 0 else 0.0
    rate = 60 * after / span if span > 0 else None
    return {"after_kill_per_min": rate and round(rate, 2), "average_per_min": round(average, 2)}


def compare(base: dict[str, float], other: dict[str, float]) -> dict[str, Any]:
    common = sorted(set(base) & set(other))
    diffs = {t: abs(other[t] - base[t]) / base[t] for t in common if base[t]}
    moved = sorted((t for t, d in diffs.items() if d > THRESHOLD), key=lambda t: -diffs[t])
    return {
        "compared": len(diffs),
        "max_rel_diff": max(diffs.values(), default=None),
        "median_rel_diff": statistics.median(diffs.values()) if diffs else None,
        "moved": [(t, base[t], other[t]) for t in moved],
    }


def render(meta: dict[str, Any], runs: list[dict[str, Any]]) -> str:
    lines = [f"# The Ray executor across the GPUs of one host: {meta['backend']}", ""]
    lines += [f"- {key}: {value}" for key, value in meta.items()]
    lines += ["", "| GPUs | requests | eval/min | scaling efficiency | one result each | retried | correct | "
              "speedups compared | max rel diff | > 3 % |", "|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    base = next((r for r in runs if r["gpus"] == min(x["gpus"] for x in runs) and "killed" not in r), None)
    for run in runs:
        eff = None
        if base and base["eval_per_min"] and run["eval_per_min"]:
            eff = run["eval_per_min"] / (base["eval_per_min"] * run["gpus"] / base["gpus"])
        cmp = compare(base["speedups"], run["speedups"]) if base else {"compared": 0, "max_rel_diff": None, "moved": []}
        label = f"{run['gpus']}" + (f" (actor {run['killed']} killed)" if "killed" in run else "")
        max_diff = "-" if cmp["max_rel_diff"] is None else f"{100 * cmp['max_rel_diff']:.2f}%"
        lines.append(
            f"| {label} | {run['requests']} | {run['eval_per_min']} | {'-' if eff is None else f'{eff:.0%}'} | "
            f"{run['one_result_each']} | {run['retried']} | {run['correct']}/{run['requests']} | {cmp['compared']} | "
            f"{max_diff} | {len(cmp['moved'])} |"
        )
    for run in runs:
        if "dip" in run:
            lines += ["", f"- lost actor `{run['killed']}`: {run['dip']['after_kill_per_min']} evaluations/min in the "
                      f"minute after the kill against {run['dip']['average_per_min']} over the run; "
                      f"{run['retried']} requests retried, {run['replacements']} actor replaced"]  # fmt: skip
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    import ray

    from ascend_kernel_gym.tasks import get_task

    gpus_here = 0
    if args.backend == "cuda":
        import torch

        gpus_here = torch.cuda.device_count()
    counts = args.gpus or sorted({1, min(2, max(1, gpus_here)), max(1, gpus_here)})
    if args.backend != "interpreter" and counts[-1] > gpus_here:
        raise SystemExit(f"--gpus asks for {counts[-1]} GPUs; this host has {gpus_here}")
    if args.dry:
        tasks = [get_task(t) for t in DRY_TASKS]
        profile, reps, total = "small", 5, min(args.requests, 8)
    else:
        tasks = [t for t in load_suite("core") if t.solution_source()]
        profile, reps, total = None, args.reps, args.requests
    items = repeated(burst(tasks, profile), total)
    options = {"backend": args.backend, "profile_reps": reps}
    runs = []
    for k in counts:
        print(f"{k} GPU(s): {len(items)} requests", flush=True)
        runs.append(run_burst(ray, items, k, options, None))
        print(f"  {runs[-1]['eval_per_min']} eval/min", flush=True)
    if not args.no_kill:
        print(f"{counts[-1]} GPU(s), one actor killed: {len(items)} requests", flush=True)
        runs.append(run_burst(ray, items, counts[-1], options, kill_after=max(1, len(items) // 3)))
    ray.shutdown()
    meta = {
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "host": f"{platform.node()} ({os.cpu_count()} cores, {gpus_here} GPUs)",
        "backend": args.backend,
        "command": "python bench/gpu_ray_scaling.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "burst": f"{len(items)} requests ({len(tasks)} solutions + broken variants, repeated), cache off",
    }
    out = args.out or (Path(os.environ["OUT"]) / DEFAULT_OUT.name if os.environ.get("OUT") else DEFAULT_OUT)
    text = render(meta, runs)
    out.write_text(text)
    out.with_suffix(".json").write_text(json.dumps({"meta": meta, "runs": runs}, indent=1, default=str))
    print(text)
    return 0 if all(r["one_result_each"] for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
