"""What the Ray executor costs on one machine: interpreter throughput, local pool vs Ray, same requests.

Both sides evaluate the same burst (the reference solutions of ``--tasks``, each ``--copies``
times with a distinct comment so nothing is answered from a cache; result cache off) with the
same number of workers: the local pool with ``--workers`` zygotes, and
``Evaluator(executor="ray")`` with ``--workers`` actors of one worker each on a local Ray
instance this script starts. Bursts alternate (local, ray, local, ray, ...) so the machine's
drift hits both sides alike; the table gives the median throughput of each side and the
overhead ratio (local / ray wall time per burst), plus the one-off costs (Ray start, actors up).

    python bench/bench_ray_overhead.py                          # print the table
    python bench/bench_ray_overhead.py --out bench/results/ray_overhead_cpu.md
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ascend_kernel_gym.evaluation import EvalRequest, Evaluator  # noqa: E402
from ascend_kernel_gym.tasks import get_task  # noqa: E402

DEFAULT_TASKS = "core/L1/relu,core/L1/softmax,core/L1/sigmoid,core/L1/gelu"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tasks", default=DEFAULT_TASKS, help=f"tasks whose solutions make the burst ({DEFAULT_TASKS})"
    )
    parser.add_argument("--copies", type=int, default=3, help="requests per task in one burst (default 3)")
    parser.add_argument("--bursts", type=int, default=3, help="bursts per side (default 3)")
    parser.add_argument("--workers", type=int, default=2, help="workers per side (default 2)")
    parser.add_argument("--trials", type=int, default=2, help="correctness trials per evaluation (default 2)")
    parser.add_argument("--out", type=Path, default=None, help="also write the table here (markdown)")
    return parser


def requests_for(task_ids: list[str], copies: int, burst: int, trials: int) -> list[EvalRequest]:
    out = []
    for task_id in task_ids:
        task = get_task(task_id)
        code = task.solution_source() or ""
        for copy in range(copies):
            out.append(EvalRequest(task=task, code=f"{code}\n# burst {burst} copy {copy}\n", num_trials=trials))
    return out


def timed_burst(ev: Evaluator, requests: list[EvalRequest]) -> tuple[float, int]:
    started = time.perf_counter()
    results = ev.evaluate_many(requests)
    return time.perf_counter() - started, sum(r.ok for r in results)


def render(meta: dict[str, Any], sides: dict[str, list[float]], oks: dict[str, int], n: int) -> str:
    local, ray = statistics.median(sides["local"]), statistics.median(sides["ray"])
    lines = [
        "# Ray executor overhead on the CPU interpreter (one machine)",
        "",
        f"- date: {meta['date']}; machine: {meta['machine']}; Python {meta['python']}",
        f"- load average (1 min) before / after: {meta['load'][0]:.1f} / {meta['load'][1]:.1f} (other work on the "
        "machine shows up as spread between bursts; sides alternate so it hits both)",
        f"- versions: {meta['versions']}",
        f"- command: `{meta['command']}`",
        f"- burst: {n} evaluations ({meta['tasks']}, x{meta['copies']}, {meta['trials']} trials each), result cache "
        f"off; {meta['workers']} workers a side (Ray: {meta['workers']} actors x 1 worker, local Ray instance, "
        f"num_cpus={meta['workers']})",
        "",
        "| side | bursts (s) | median s / burst | evaluations / min | correct |",
        "|---|---|---|---|---|",
        f"| local pool | {', '.join(f'{s:.1f}' for s in sides['local'])} | {local:.2f} | {60 * n / local:.1f} | "
        f"{oks['local']}/{n * len(sides['local'])} |",
        f"| Ray executor | {', '.join(f'{s:.1f}' for s in sides['ray'])} | {ray:.2f} | {60 * n / ray:.1f} | "
        f"{oks['ray']}/{n * len(sides['ray'])} |",
        "",
        f"Ray's throughput is **{local / ray:.2f}x** the local pool's (overhead {100 * (ray / local - 1):+.1f} % "
        f"wall time per burst, {1000 * (ray - local) / n:+.0f} ms per evaluation).",
        f"One-off: Ray start {meta['ray_start_s']:.1f} s, actors up (pools warm) {meta['actors_up_s']:.1f} s; "
        f"local pool warm {meta['local_up_s']:.1f} s.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    import ray

    task_ids = [t.strip() for t in args.tasks.split(",") if t.strip()]
    load_before = os.getloadavg()[0]
    t0 = time.perf_counter()
    local = Evaluator(backend="interpreter", workers=args.workers, cache=False)
    local.warm_up()
    local_up = time.perf_counter() - t0
    t0 = time.perf_counter()
    ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False)
    ray_start = time.perf_counter() - t0
    t0 = time.perf_counter()
    remote = Evaluator(backend="interpreter", executor="ray", actors=args.workers, workers_per_device=1, cache=False)
    remote.warm_up()
    actors_up = time.perf_counter() - t0
    sides: dict[str, list[float]] = {"local": [], "ray": []}
    oks = {"local": 0, "ray": 0}
    n = len(task_ids) * args.copies
    try:
        for burst in range(args.bursts):
            for name, ev in (("local", local), ("ray", remote)):
                seconds, ok = timed_burst(ev, requests_for(task_ids, args.copies, burst, args.trials))
                sides[name].append(seconds)
                oks[name] += ok
                print(f"burst {burst} {name}: {seconds:.2f} s, {ok}/{n} correct", flush=True)
    finally:
        remote.close()
        local.close()
        ray.shutdown()
    from importlib.metadata import version

    meta = {
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores ({platform.processor() or 'cpu'})",
        "python": platform.python_version(),
        "versions": ", ".join(f"{d} {version(d)}" for d in ("ray", "torch", "triton")),
        "command": " ".join(["python", os.path.relpath(__file__, ROOT), *(sys.argv[1:] if argv is None else argv)]),
        "tasks": ", ".join(task_ids),
        "copies": args.copies,
        "trials": args.trials,
        "workers": args.workers,
        "ray_start_s": ray_start,
        "actors_up_s": actors_up,
        "local_up_s": local_up,
        "load": (load_before, os.getloadavg()[0]),
    }
    text = render(meta, sides, oks, n)
    print(text)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
