"""Several evaluations per GPU (issue 24): throughput, latency and timing stability at 1, 2, 4, 8 workers per device.

The burst of issue 24: every reference solution of the core suite and, for each, a broken
variant (its ``forward`` raises at the first call: ``tasks.variants.broken_variant``), 90
requests with the full shape profile and the result cache off, evaluated by
``Evaluator(workers_per_device=c)`` for each ``c`` of ``--concurrency``, in two request orders
(``interleaved``: solution, broken, solution, ...; ``shuffled``: a fixed random permutation).
The burst goes through ``Evaluator.evaluate_many`` at once, as an RL step's batch would (the
evaluator hands each free worker to the waiting evaluation that takes up most of a device among
those the device would admit now, so the two orders differ only in what it cannot foresee). Per run: evaluations
per minute (requests / the burst's wall time), latency p50 / p95 (each evaluation's own
``total`` time, waits for a worker and for the device lease included), verdicts against the
baseline run (the lowest concurrency, first order), and for every task correct in
both runs the relative difference of its speedup to the baseline's: the maximum, the median and
the tasks beyond 3 %; and the load of the host's CPUs and of the GPU, inside and outside the
timed calls, with CPU and GPU seconds per process name (``host_load.py``). The baseline's repeat
at the same concurrency in the other order is the
noise floor (two W=1 runs agreed within 3.4 % in issue 24). With ``--bursts N`` each run above
one worker per device sends the burst N times through its evaluator, a record each: from the
second on, the evaluator knows the tasks' memory needs and times (an RL run's evaluator does from
its second step; every burst compiles every kernel again, each evaluation in a fresh cache).

Runs go in priority order (baseline, highest concurrency, baseline in the other order, then the
rest) and a run that would end past ``--budget-s`` is left out (and said so), so the whole script
fits one 10-minute call; results are written after every run and every 15 results of a run (a
run cut short by the call's limit keeps what finished, marked ``partial``), progress printed as it goes.

    python bench/gpu_concurrency.py                   # cuda: bench/results/gpu_concurrency_h200.{md,json}
    python bench/gpu_concurrency.py --backend interpreter --dry --concurrency 1,2 --out /tmp/c.md  # CPU smoke test
    python bench/gpu_concurrency.py --concurrency 1,8 --orders interleaved --bursts 2  # cold and warm at eight
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import os
import platform
import random
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import _bootstrap  # noqa: E402, F401  (before the package: works without gymnasium)
from _benchutil import package_versions, positive_ints  # noqa: E402
from host_load import LoadSampler, load_summary  # noqa: E402

from ascend_kernel_gym.evaluation import EvalRequest, EvalResult, Evaluator  # noqa: E402
from ascend_kernel_gym.evaluation.evaluator import DEFAULT_PROFILE_BUDGET_S  # noqa: E402
from ascend_kernel_gym.tasks import load_suite  # noqa: E402
from ascend_kernel_gym.tasks.variants import broken_variant  # noqa: E402

ORDERS = ("interleaved", "shuffled")
#: a speedup that moved by more than this share of the baseline's counts as moved
THRESHOLD = 0.03
DRY_TASKS = "core/L1/relu,core/L1/softmax,core/L2/linear_gelu"
DEFAULT_OUT = ROOT / "bench" / "results" / "gpu_concurrency_h200.md"
#: settings a report's command line shows (the package's, and the children's CUDA queues)
RECORDED_ENV = ("AKG_", "CUDA_DEVICE_MAX_CONNECTIONS")


def parse_concurrency(text: str) -> list[int]:
    """``"1,2,4,8"`` -> ``[1, 2, 4, 8]`` (sorted, unique, each >= 1)."""
    return positive_ints(text, "--concurrency")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="cuda", choices=("cuda", "npu", "interpreter"))
    parser.add_argument("--concurrency", type=parse_concurrency, default=[1, 2, 4, 8], help="workers per device")
    parser.add_argument("--orders", default=",".join(ORDERS), help=f"request orders, of {ORDERS}")
    parser.add_argument("--tasks", default=None, help="comma-separated task ids (default: all with solutions)")
    parser.add_argument("--levels", default=None, help="comma-separated levels (default: all)")
    parser.add_argument("--reps", type=int, default=100, help="timed repetitions per model (default 100)")
    parser.add_argument(
        "--timing-budget-s",
        type=float,
        default=DEFAULT_PROFILE_BUDGET_S,
        help=f"bound the timed rounds by time (profile_budget_s, default {DEFAULT_PROFILE_BUDGET_S}; 0: all rounds)",
    )
    parser.add_argument("--timeout", type=float, default=None, help="per-evaluation limit (default: the evaluator's)")
    parser.add_argument("--budget-s", type=float, default=510.0, help="leave out runs that would end later")
    parser.add_argument("--ascend", default="off", choices=("off", "warn"), help="Ascend checks and lowering")
    parser.add_argument("--seed", type=int, default=0, help="seed of the shuffled order")
    parser.add_argument(
        "--bursts",
        type=int,
        default=1,
        help="bursts per run of more than one worker per device, through one evaluator (default 1); from the "
        "second on it knows the tasks' memory needs and times, as an RL run's evaluator does from its second step "
        "(one worker gains nothing from knowing them: it runs one evaluation at a time, alone)",
    )
    parser.add_argument("--dry", action="store_true", help=f"tiny run: {DRY_TASKS}, 5 timed reps, small shapes")
    parser.add_argument("--out", type=Path, default=None, help="markdown output (default: $OUT or bench/results)")
    return parser


def burst(tasks: list[Any], profile: str | None) -> list[dict[str, Any]]:
    """The requests: each task's reference solution and its broken variant, interleaved."""
    items = []
    for task in tasks:
        code = task.solution_source() or ""
        for kind, source in (("solution", code), ("broken", broken_variant(code))):
            request = EvalRequest(task=task, code=source, profile=profile)
            items.append({"label": f"{task.id} {kind}", "task": task.id, "kind": kind, "request": request})
    return items


def ordered(items: list[dict[str, Any]], order: str, seed: int) -> list[dict[str, Any]]:
    if order == "interleaved":
        return list(items)
    if order == "shuffled":
        shuffled = list(items)
        random.Random(seed).shuffle(shuffled)
        return shuffled
    raise ValueError(f"unknown order {order!r}; choose from {ORDERS}")


def plan(concurrency: list[int], orders: list[str]) -> list[tuple[int, str]]:
    """Runs by priority: baseline, the highest concurrency, the baseline in the second order, then the rest."""
    low, first = concurrency[0], orders[0]
    runs = [(low, first)]
    runs += [(c, first) for c in sorted(concurrency[1:], reverse=True)[:1]]
    runs += [(low, o) for o in orders[1:]]
    runs += [(c, first) for c in sorted(concurrency[1:], reverse=True)[1:]]
    runs += [(c, o) for o in orders[1:] for c in sorted(concurrency[1:], reverse=True)]
    return runs


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ranked = sorted(values)
    return ranked[min(len(ranked) - 1, max(0, round(q * (len(ranked) - 1))))]


def run_once(
    items: list[dict[str, Any]],
    per_device: int,
    order: str,
    options: dict[str, Any],
    seed: int,
    progress: Callable[[dict[str, Any]], None] | None = None,
    bursts: int = 1,
) -> list[dict[str, Any]]:
    """``bursts`` bursts, one after the other, through one fresh evaluator with ``per_device``
    workers per device, a run record each; ``progress`` gets the runs so far, the last marked
    ``partial``, with every 15 results, so a run cut short leaves them."""
    queue = ordered(items, order, seed)
    started = time.perf_counter()
    runs: list[dict[str, Any]] = []
    with Evaluator(workers_per_device=per_device, cache=False, **options) as ev:
        ev.warm_up()
        warm_s = time.perf_counter() - started
        for number in range(1, bursts + 1):
            before = dict(ev.stats)
            report = (lambda partial: progress([*runs, partial])) if progress is not None else None
            run = _burst_through(ev, queue, per_device, order, warm_s if number == 1 else 0.0, report, before)
            run["burst"] = number
            runs.append(run)
    return runs


def _burst_through(
    ev: Evaluator,
    queue: list[dict[str, Any]],
    per_device: int,
    order: str,
    warm_s: float,
    progress: Callable[[dict[str, Any]], None] | None,
    before: dict[str, Any],
) -> dict[str, Any]:
    """One burst through ``ev``; ``before``: its stats when the burst began (a run counts its own)."""

    def since(stats: dict[str, Any]) -> dict[str, Any]:
        return {k: v - before.get(k, 0) if isinstance(v, (int, float)) else v for k, v in stats.items()}

    rows: list[dict[str, Any] | None] = [None] * len(queue)
    lock = threading.Lock()
    begin = time.perf_counter()

    def record(i: int, result: Any) -> None:
        with lock:
            rows[i] = row_of(queue[i], result, time.perf_counter() - begin)
            done = sum(row is not None for row in rows)
            if done % 15 == 0 or done == len(queue):
                so_far = time.perf_counter() - begin
                print(f"  c={per_device} {order}: {done}/{len(queue)} in {so_far:.0f} s", flush=True)
                if progress is not None and done < len(queue):
                    partial = summary(rows, per_device, ev.workers, order, warm_s, so_far, since(ev.stats))
                    progress(partial | {"partial": f"{done} of {len(queue)} requests finished"})

    # As an RL step would: the whole burst at once, the evaluator choosing what runs next.
    with LoadSampler() as sampler:
        ev.evaluate_many([item["request"] for item in queue], on_result=record)
    end = time.perf_counter()
    run = summary(rows, per_device, ev.workers, order, warm_s, end - begin, since(dict(ev.stats)))
    run["load"] = load_summary(sampler.samples, begin, end, lease_spans(run))
    # the samples themselves, for a timeline: seconds into the burst, CPU share, ready, GPU %, GPU GiB used
    run["load_samples"] = [
        [round(s["t"] - begin, 2), s["cpu"] and round(s["cpu"], 3), s["running"], s["gpu"], s["gpu_mem_gib"]]
        for s in sampler.samples
    ]
    return run


def summary(
    rows: list[dict[str, Any] | None],
    per_device: int,
    workers: int,
    order: str,
    warm_s: float,
    makespan: float,
    stats: dict[str, Any],
) -> dict[str, Any]:
    """A run's record from its finished rows."""
    done_rows = [r for r in rows if r is not None]
    latencies = [r["total_s"] for r in done_rows if r["total_s"] is not None]
    return {
        "per_device": per_device,
        "workers": workers,
        "order": order,
        "warm_s": round(warm_s, 2),
        "makespan_s": round(makespan, 2),
        "per_min": round(60 * len(done_rows) / makespan, 2) if makespan > 0 else None,
        "p50_s": percentile(latencies, 0.5),
        "p95_s": percentile(latencies, 0.95),
        "ok": sum(r["ok"] for r in done_rows),
        # evaluations run again after an out-of-memory next to a neighbour, and held back because they would not fit
        "retries": stats.get("retries", 0),
        "memory_waits": stats.get("memory_waits", 0),
        "rows": done_rows,
    }


def row_of(item: dict[str, Any], result: EvalResult, finished_s: float) -> dict[str, Any]:
    return {
        "label": item["label"],
        "task": item["task"],
        "kind": item["kind"],
        "ok": result.ok,
        "error_type": result.error_type.value,
        # what a harness error or a changed verdict says (the 12-05 H100 run at 8 workers had 5
        # harness errors and kept no message)
        "error": (result.error_message or "")[:400],
        "speedup": result.speedup,
        "total_s": result.stage_durations.get("total"),
        "finished_s": round(finished_s, 3),
        "retried": any(w.startswith("retried:") for w in result.warnings),
        # why it was run again, how, and how long it waited for the device
        "retry": next((w[:400] for w in result.warnings if w.startswith("retried:")), None),
        "lease": result.timing.get("device_lease"),
        "kernel_ms": result.kernel_ms,
        "ref_ms": result.ref_ms,
        "cushion_ms": result.timing.get("cushion_ms"),
        "gate": result.timing.get("gate"),
        "cuda_sync": result.timing.get("cuda_sync"),
        "host": result.timing.get("host"),
        # wall seconds of the timing stage's parts (the lease covers "rounds"; the host summary
        # splits them into input loads and timed calls)
        "phase_s": result.timing.get("phase_s"),
        # where the checked rounds' output copies waited: device, host memory, or compared at once
        "checks_kept": result.timing.get("checks_kept"),
        "stages": result.stage_durations,
        # peak device memory (MiB) of the candidate's child and the judging reference child
        "memory_mb": result.device_memory_mb,
    }


def compare(base: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    """Verdict changes and speedup differences of ``other`` against ``base``."""
    mine = {r["label"]: r for r in base["rows"]}
    theirs = {r["label"]: r for r in other["rows"]}
    changed = sorted(label for label in mine.keys() & theirs.keys() if mine[label]["ok"] != theirs[label]["ok"])
    moved = []
    for label in sorted(mine.keys() & theirs.keys()):
        a, b = mine[label], theirs[label]
        if a["ok"] and b["ok"] and a["speedup"] and b["speedup"]:
            moved.append((abs(b["speedup"] - a["speedup"]) / a["speedup"], label, a["speedup"], b["speedup"]))
    moved.sort(reverse=True)
    diffs = [m[0] for m in moved]
    return {
        "verdicts_changed": changed,
        "compared": len(moved),
        "max_rel": round(max(diffs), 4) if diffs else None,
        "median_rel": round(statistics.median(diffs), 4) if diffs else None,
        "over": sum(d > THRESHOLD for d in diffs),
        "worst": [{"label": m[1], "base": m[2], "other": m[3], "rel": round(m[0], 4)} for m in moved[:5]],
    }


def label(run: dict[str, Any]) -> str:
    """``c=8 interleaved`` (``c=8 interleaved, burst 2`` from a run's second burst on)."""
    return f"c={run['per_device']} {_order_text(run)}"


def _order_text(run: dict[str, Any]) -> str:
    burst = run.get("burst", 1)
    return run["order"] + (f", burst {burst}" if burst > 1 else "")


def busy_share(run: dict[str, Any]) -> float | None:
    """The share of the burst's worker-seconds the workers held an evaluation (None: not recorded)."""
    seconds = [(row.get("stages") or {}).get("worker") for row in run["rows"]]
    seconds = [s for s in seconds if isinstance(s, (int, float))]  # a static check's reject took no worker
    if not seconds:
        return None
    held = sum(seconds)
    total = run["workers"] * run["makespan_s"]
    return held / total if total > 0 else None


def _num(value: Any, fmt: str = ".2f") -> str:
    return "-" if value is None else format(value, fmt)


def _leased(run: dict[str, Any]) -> list[tuple[dict[str, Any], float, float]]:
    """The run's rows that held the device alone, each with its ``perf_counter`` span."""
    rows = [(row, (row.get("lease") or {}).get("span")) for row in run["rows"]]
    return [(row, s[0], s[1]) for row, s in rows if s and len(s) == 2]


def lease_spans(run: dict[str, Any]) -> list[tuple[float, float]]:
    """The ``perf_counter`` spans in which the run's evaluations held the device alone."""
    return [(start, end) for _, start, end in _leased(run)]


def held_s(run: dict[str, Any]) -> float | None:
    """Seconds the run's evaluations held the device alone (their timed calls), summed."""
    spans = lease_spans(run)
    return sum(b - a for a, b in spans) if spans else None


def lease_gaps(run: dict[str, Any]) -> dict[str, Any] | None:
    """The time from the end of one lease to the start of the next (no evaluation held the device
    alone), and at how many of those ends the next holder was already asking for the device (its
    quiet request, ``phase_s["quiet_wait"]`` before its go-ahead, came first); at the others no
    evaluation was ready to time. None with fewer than two leases."""
    leases = sorted(
        (start, end, start - float((row.get("phase_s") or {}).get("quiet_wait") or 0.0))
        for row, start, end in _leased(run)
    )
    if len(leases) < 2:
        return None
    gaps = [(nxt[0] - last[1], nxt[2] < last[1]) for last, nxt in itertools.pairwise(leases)]
    return {"gaps": len(gaps), "gap_s": round(sum(g for g, _ in gaps), 2), "asking": sum(w for _, w in gaps)}


def _load_text(means: dict[str, Any]) -> str:
    cpu, gpu = means.get("cpu"), means.get("gpu")
    return (
        f"{_num(cpu * 100 if cpu is not None else None, '.0f')} % / {_num(means.get('running'), '.1f')} / "
        f"{_num(gpu, '.0f')} %"
    )


def render(meta: dict[str, Any], runs: list[dict[str, Any]]) -> str:
    lines = [
        f"# Evaluations per device: {meta['backend']}, {meta['requests']} requests per burst",
        "",
        f"- date: {meta['date']}; device: {meta['device']}; host: {meta['cores']} cores",
        f"- versions: {', '.join(f'{k} {v}' for k, v in meta['versions'].items())}, Python {meta['python']}",
        f"- command: `{meta['command']}`",
        f"- burst: {meta['tasks']} reference solutions + as many broken variants, profile {meta['profile']}, "
        f"cache off, {meta['reps']} timed reps per model"
        + (f" (rounds bounded to {meta['timing_budget_s']} s)" if meta.get("timing_budget_s") else "")
        + f", Ascend checks {meta['ascend']}",
        f"- baseline: c={runs[0]['per_device']} {runs[0]['order']}" if runs else "- no run finished",
        "",
        "| workers/device | order | eval/min | x baseline | burst s | device held s | warm-up s | p50 s | p95 s | "
        "correct | verdicts changed | speedups compared | max rel diff | median rel diff | > 3 % |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    base = runs[0] if runs else None
    for run in runs:
        cmp = compare(base, run) if base is not None else {}
        ratio = run["per_min"] / base["per_min"] if base and base["per_min"] and run["per_min"] else None
        order_text = _order_text(run) + (f" (cut short: {run['partial']})" if run.get("partial") else "")
        lines.append(
            f"| {run['per_device']} ({run['workers']} in all) | {order_text} | {_num(run['per_min'], '.1f')} | "
            f"{_num(ratio)} | {_num(run['makespan_s'], '.1f')} | {_num(held_s(run), '.1f')} | "
            f"{_num(run['warm_s'], '.1f')} | "
            f"{_num(run['p50_s'])} | {_num(run['p95_s'])} | {run['ok']}/{len(run['rows'])} | "
            f"{len(cmp.get('verdicts_changed', []))} | {cmp.get('compared', 0)} | "
            f"{_num(cmp.get('max_rel'), '.2%')} | {_num(cmp.get('median_rel'), '.2%')} | {cmp.get('over', 0)} |"
        )
    lines.append("")
    for run in runs[1:]:
        cmp = compare(base, run)
        if cmp["worst"]:
            worst = ", ".join(
                f"{w['label']} {w['base']:.3g} -> {w['other']:.3g} ({w['rel']:.1%})" for w in cmp["worst"]
            )
            lines.append(f"- {label(run)}: largest speedup moves: {worst}")
        if cmp["verdicts_changed"]:
            lines.append(f"- {label(run)}: verdicts changed: {', '.join(cmp['verdicts_changed'])}")
    for run in runs:
        kept = [row.get("checks_kept") or {} for row in run["rows"]]
        if any(kept):
            keys = ("agreed", "device", "host", "at_once", "sampled")
            where = {key: sum(int(k.get(key, 0)) for k in kept) for key in keys}
            lines.append(
                f"- {label(run)}: checked outputs that agreed with the reference's in their round "
                f"{where['agreed']}; kept for a re-run of the reference on the device {where['device']}, "
                f"in host memory {where['host']}, compared inside the lease {where['at_once']}; "
                f"tensors kept as a sample {where['sampled']}"
            )
        if run.get("retries") or run.get("memory_waits"):
            lines.append(
                f"- {label(run)}: {run.get('retries', 0)} run again after an "
                f"out-of-memory, {run.get('memory_waits', 0)} held back until they fit"
            )
        planned = [row for row in run["rows"] if "reference_plan" in (row.get("memory_mb") or {})]
        if planned:  # the judging reference child reports the plan's memory (cuda) only where it built one
            lines.append(
                f"- {label(run)}: the judge built a plan (ran the reference) for {len(planned)} of "
                f"{len(run['rows'])} evaluations"
            )
        for row in run["rows"]:
            if row.get("error_type") == "harness_error":
                lines.append(f"- {label(run)}: harness error in {row['label']}: {row.get('error', '')}")
    for run in runs:
        between = lease_gaps(run)
        if between is not None:
            lines.append(
                f"- {label(run)}: between the leases {between['gap_s']:.1f} s in {between['gaps']} gaps; the next "
                f"evaluation was already asking for the device at the end of {between['asking']} of them (at the "
                "others none was ready to time)"
            )
        share = busy_share(run)
        if share is not None:
            lines.append(
                f"- {label(run)}: the workers held an evaluation {share:.0%} of the burst's worker-seconds "
                "(the rest of the time they were idle)"
            )
    for run in runs:
        load = run.get("load")
        if load and load["all"]["samples"]:
            parts = [
                f"{name} {_load_text(load[key])}"
                for key, name in (("all", "whole burst"), ("in_spans", "while one timed"), ("outside", "otherwise"))
                if load[key]["samples"]
            ]
            lines.append(f"- {label(run)}: load (CPUs busy, processes ready to run, GPU busy): {'; '.join(parts)}")
            for key, what in (("cpu_s_by_name", "CPU"), ("gpu_s_by_name", "GPU")):
                by_name = ", ".join(f"{name} {seconds:.1f}" for name, seconds in load["all"].get(key, {}).items())
                if by_name:
                    lines.append(f"- {label(run)}: {what} seconds by process name: {by_name}")
    for note in meta.get("left_out", []):
        lines.append(f"- left out: {note}")
    if base is not None and not any(compare(base, r)["compared"] for r in runs[1:]):
        lines.append("- no speedups to compare (none measured on this backend, or one run only)")
    return "\n".join(lines) + "\n"


def write(out: Path, meta: dict[str, Any], runs: list[dict[str, Any]]) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(meta, runs))
    out.with_suffix(".json").write_text(json.dumps({"meta": meta, "runs": runs}, indent=2))


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.bursts < 1:
        raise SystemExit(f"--bursts must be at least 1, got {args.bursts}")
    orders = [o.strip() for o in args.orders.split(",") if o.strip()]
    for order in orders:
        if order not in ORDERS:
            raise SystemExit(f"unknown order {order!r}; choose from {ORDERS}")
    if args.dry:
        args.tasks = args.tasks or DRY_TASKS
        args.reps = min(args.reps, 5)
    profile = "small" if args.backend == "interpreter" else "full"
    tasks = [t for t in load_suite("core") if t.solution_path is not None]
    if args.tasks:
        wanted = {s.strip() for s in args.tasks.split(",") if s.strip()}
        tasks = [t for t in tasks if t.id in wanted]
    if args.levels:
        levels = {int(s) for s in args.levels.split(",") if s.strip()}
        tasks = [t for t in tasks if t.level in levels]
    if not tasks:
        raise SystemExit("no task with a reference solution matches --tasks / --levels")
    out = args.out or (Path(os.environ["OUT"]) / DEFAULT_OUT.name if os.environ.get("OUT") else DEFAULT_OUT)
    items = burst(tasks, profile)
    options = {
        "backend": args.backend, "profile_reps": args.reps, "profile_budget_s": args.timing_budget_s or None,
        "timeout_s": args.timeout,
        "ascend_checks": args.ascend, "ascend_lower": args.ascend,
    }  # fmt: skip
    started = time.perf_counter()
    meta: dict[str, Any] = {
        "backend": args.backend,
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "device": "-",
        "cores": os.cpu_count(),
        "versions": package_versions(),
        "python": platform.python_version(),
        "command": "".join(f"{k}={v} " for k, v in sorted(os.environ.items()) if k.startswith(RECORDED_ENV))
        + "python "
        + " ".join([os.path.relpath(__file__, ROOT), *(argv if argv is not None else sys.argv[1:])]),
        "tasks": len(tasks),
        "requests": len(items),
        "profile": profile,
        "reps": args.reps,
        "timing_budget_s": args.timing_budget_s or None,
        "ascend": args.ascend,
        "left_out": [],
    }
    runs: list[dict[str, Any]] = []
    took: dict[int, float] = {}
    for per_device, order in plan(args.concurrency, orders):
        elapsed = time.perf_counter() - started
        guess = took.get(per_device) or max(took.values(), default=0.0)
        if runs and elapsed + guess > args.budget_s:
            meta["left_out"].append(f"c={per_device} {order} (about {guess:.0f} s; {elapsed:.0f} s of "
                                    f"{args.budget_s:.0f} s spent)")  # fmt: skip
            print(f"left out: c={per_device} {order}", flush=True)
            continue
        print(f"run: {per_device} per device, {order}, {len(items)} requests", flush=True)
        t0 = time.perf_counter()
        bursts = args.bursts if per_device > 1 else 1
        new = run_once(
            items, per_device, order, options, args.seed, lambda partial: write(out, meta, [*runs, *partial]), bursts
        )
        took[per_device] = time.perf_counter() - t0
        runs.extend(new)
        if meta["device"] == "-":
            from ascend_kernel_gym.backends.detect import device_info

            meta["device"] = device_info(args.backend).name
        meta["elapsed_s"] = round(time.perf_counter() - started, 1)
        write(out, meta, runs)
        for run in new:
            print(
                f"  {label(run)}: {run['per_min']} eval/min, p50 {run['p50_s']} s, p95 {run['p95_s']} s, "
                f"{run['ok']} correct",
                flush=True,
            )
    print(render(meta, runs))
    print(f"wrote {out} and {out.with_suffix('.json')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
