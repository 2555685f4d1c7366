"""Evaluator speed on the CPU interpreter: warm pool vs a fresh Python process per evaluation.

Both sides run exactly the same checks (the evaluator's child code: static stage, compile,
5 correctness trials with the launch / operator recorder, sandbox guard) on the same small
correct L1 kernel (``core/L1/relu``, profile ``small``). The fresh-process side starts a new
``python`` per evaluation that imports torch and triton and runs the checks inline, which is
how KernelBench-style harnesses work. Same machine, same run; the table reports ratios.

    python bench/bench_evaluator.py                 # print the table
    python bench/bench_evaluator.py --out bench/results/evaluator_cpu.md
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import os
import pickle
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ascend_kernel_gym.evaluation import EvalRequest, EvalResult, Evaluator  # noqa: E402
from ascend_kernel_gym.evaluation.job import Job  # noqa: E402
from ascend_kernel_gym.evaluation.static import check_source  # noqa: E402
from ascend_kernel_gym.tasks import get_task  # noqa: E402

TASK_ID = "core/L1/relu"

#: The fresh-process side: a new interpreter imports torch + triton and runs the same child code.
FRESH_SCRIPT = r"""
import os, pickle, sys, types
os.environ["TRITON_INTERPRET"] = "1"
root = sys.argv[1]
sys.path.insert(0, root)
pkg = types.ModuleType("ascend_kernel_gym"); pkg.__path__ = [os.path.join(root, "ascend_kernel_gym")]
pkg.__version__ = "bench"; sys.modules["ascend_kernel_gym"] = pkg
import torch, triton  # noqa: F401  (what every fresh harness process pays)
job = pickle.loads(sys.stdin.buffer.read())
from ascend_kernel_gym.evaluation.child import child_main
child_main(job, os.dup(1), "fresh")
"""


def _variant(code: str, i: int) -> str:
    return f"{code}\n# evaluation {i}\n"  # distinct code: no cache can answer


def run_fresh(task, code: str, n: int) -> list[float]:
    """Wall seconds per evaluation, one fresh ``python`` process each."""
    latencies = []
    for i in range(n):
        source = _variant(code, i)
        report = check_source(source)
        sandbox = tempfile.mkdtemp(prefix="akg-bench-fresh-")
        job = Job(
            task=task,
            code=source,
            code_hash=hashlib.sha256(source.encode()).hexdigest(),
            backend="interpreter",
            profile=task.default_profile("interpreter"),
            measure_performance=False,
            sandbox=sandbox,
            static_warnings=list(report.warnings),
            kernels=list(report.kernels),
        )
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")}
        env.update({"OMP_NUM_THREADS": "1", "TRITON_INTERPRET": "1"})
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-c", FRESH_SCRIPT, str(ROOT)],
            input=pickle.dumps(job),
            capture_output=True,
            env=env,
            timeout=600,
        )
        latencies.append(time.perf_counter() - start)
        payload = proc.stdout[8:]
        result = EvalResult.from_dict(__import__("json").loads(payload)["result"])
        if not result.ok:
            raise RuntimeError(f"fresh-process evaluation failed: {result.error_type}: {result.error_message}")
    return latencies


def run_warm(task, code: str, workers: int, n_latency: int, n_throughput: int) -> tuple[list[float], float]:
    """(sequential latencies, evaluations per second with ``workers`` in parallel)."""
    with Evaluator(backend="interpreter", workers=workers, cache=False) as ev:
        ev.warm_up()
        ev.evaluate(EvalRequest(task=task, code=_variant(code, -1), measure_performance=False))
        latencies = []
        for i in range(n_latency):
            start = time.perf_counter()
            result = ev.evaluate(EvalRequest(task=task, code=_variant(code, i), measure_performance=False))
            latencies.append(time.perf_counter() - start)
            if not result.ok:
                raise RuntimeError(f"warm evaluation failed: {result.error_type}: {result.error_message}")
        requests = [
            EvalRequest(task=task, code=_variant(code, 1000 + i), measure_performance=False)
            for i in range(n_throughput)
        ]
        start = time.perf_counter()
        results = ev.evaluate_many(requests)
        elapsed = time.perf_counter() - start
        if not all(r.ok for r in results):
            raise RuntimeError("a warm evaluation in the throughput run failed")
    return latencies, n_throughput / elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fresh", type=int, default=3, help="fresh-process evaluations (default 3)")
    parser.add_argument("--latency", type=int, default=10, help="sequential warm evaluations (default 10)")
    parser.add_argument("--throughput", type=int, default=24, help="evaluations per throughput run (default 24)")
    parser.add_argument("--out", type=Path, default=None, help="also write the table as markdown here")
    args = parser.parse_args(argv)

    from rich.console import Console
    from rich.table import Table
    from tqdm import tqdm

    task = get_task(TASK_ID)
    code = task.solution_source() or ""
    load_before = os.getloadavg()[0]
    steps = tqdm(total=3, desc="bench", unit="phase")
    warm1_lat, warm1_tput = run_warm(task, code, 1, args.latency, args.throughput)
    steps.update()
    _, warm2_tput = run_warm(task, code, 2, 2, args.throughput)
    steps.update()
    fresh_lat = run_fresh(task, code, args.fresh)
    steps.update()
    steps.close()
    load_after = os.getloadavg()[0]

    warm_med = statistics.median(warm1_lat)
    fresh_med = statistics.median(fresh_lat)
    rows = [
        ("fresh python process per evaluation", "1", len(fresh_lat), fresh_med, 1.0 / fresh_med, "1.00"),
        ("warm pool (fork per evaluation)", "1", len(warm1_lat), warm_med, warm1_tput, f"{fresh_med / warm_med:.1f}"),
        ("warm pool (fork per evaluation)", "2", args.throughput, None, warm2_tput, "-"),
    ]
    title = f"Evaluator latency and throughput, {TASK_ID} (interpreter, profile small, 5 trials)"
    table = Table(title=title)
    for column in ("mode", "workers", "evaluations", "median latency s", "evaluations/s", "latency ratio vs fresh"):
        table.add_column(column)
    for mode, workers, count, latency, tput, ratio in rows:
        table.add_row(mode, workers, str(count), "-" if latency is None else f"{latency:.3f}", f"{tput:.2f}", ratio)
    console = Console()
    console.print(table)
    scaling = warm2_tput / warm1_tput
    summary = (
        f"warm pool latency is {fresh_med / warm_med:.1f}x lower than a fresh process; "
        f"throughput 2 workers / 1 worker = {scaling:.2f}x on {os.cpu_count()} cores"
    )
    console.print(summary)
    if args.out is not None:
        lines = [
            f"# {title}",
            "",
            f"- date: {dt.date.today().isoformat()}",
            f"- machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
            f"- torch {_version('torch')}, triton {_version('triton')}",
            f"- 1-minute load average before / after: {load_before:.1f} / {load_after:.1f}"
            + (
                " (above the core count: other processes shared the CPU and the 2-worker scaling is understated)"
                if max(load_before, load_after) > (os.cpu_count() or 1)
                else ""
            ),
            f"- command: `python bench/bench_evaluator.py {' '.join(argv if argv is not None else sys.argv[1:])}`",
            "",
            "| mode | workers | evaluations | median latency (s) | evaluations/s | latency ratio vs fresh |",
            "|---|---|---|---|---|---|",
        ]
        for mode, workers, count, latency, tput, ratio in rows:
            lat = "-" if latency is None else f"{latency:.3f}"
            lines.append(f"| {mode} | {workers} | {count} | {lat} | {tput:.2f} | {ratio} |")
        lines += ["", summary, ""]
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text("\n".join(lines))
        console.print(f"wrote {args.out}")
    return 0


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "not installed"


if __name__ == "__main__":
    sys.exit(main())
