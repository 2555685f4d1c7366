"""Does a device context starting in another process move a timing? A probe on one GPU.

With several workers per device, each evaluation's candidate child starts a device context ahead
of its job (``ahead.device_init``). Today a spare that is still starting is stopped while a
neighbour times, and contexts seem to start one at a time. This probe answers two questions with
the evaluator's own timing primitives (``timing.timed_call_host``: L2 flush, launch cushion,
device events):

1. *start cost*: how long a forked process takes to start its context (``torch.cuda.init`` plus
   the first allocation) and to warm Triton's launch path, alone and with 4 or 8 processes
   starting at once (start/end stamps show whether the driver serialises them); also with
   ``CUDA_DEVICE_MAX_CONNECTIONS=1`` (one hardware work queue per context instead of 8).
2. *disturbance*: a timer process times three workloads (a 16M-element add, a 4096 matmul, a
   Triton kernel) in rounds; during each round other processes do one thing: nothing (control),
   start contexts one after another (``context``), start contexts and warm Triton's launch path
   with small kernels (``context_warm``), spin on the CPU (``cpu``), or launch kernels without
   pause (``kernels``, the positive control). Rounds are shuffled and repeated.

Writes ``context_probe.json`` and ``context_probe.md`` to ``--out-dir``.

    python bench/gpu_context_probe.py --out-dir $OUT
"""

from __future__ import annotations

import argparse
import datetime
import json
import multiprocessing as mp
import os
import random
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
import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from ascend_kernel_gym.evaluation import timing  # noqa: E402

CTX = mp.get_context("fork")
MODES = ("idle", "context", "context_warm", "cpu", "kernels")


@triton.jit
def _axpy(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, 2.0 * tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def _start_context(warm: bool) -> dict[str, float]:
    t0 = time.time()
    torch.cuda.init()
    t1 = time.time()
    torch.cuda.set_device(0)
    torch.empty(1, device="cuda")
    torch.cuda.synchronize()
    t2 = time.time()
    out = {"start": t0, "init_s": t1 - t0, "context_s": t2 - t1, "end": t2}
    if warm:
        from ascend_kernel_gym.evaluation import warmup

        warmup.run_child_warmup(torch.device("cuda", 0))
        out["warm_s"] = time.time() - t2
        out["end"] = time.time()
    return out


def _starter(go: Any, results: Any, warm: bool, env: dict[str, str] | None = None) -> None:
    os.environ.update(env or {})  # before the driver starts: it reads its variables then
    go.wait()
    try:
        results.put(_start_context(warm))
    except Exception as exc:
        results.put({"error": repr(exc)})


def start_cost(concurrency: int, warm: bool, env: dict[str, str] | None = None) -> list[dict[str, float]]:
    go = CTX.Event()
    results = CTX.Queue()
    procs = [CTX.Process(target=_starter, args=(go, results, warm, env)) for _ in range(concurrency)]
    for p in procs:
        p.start()
    time.sleep(0.5)
    go.set()
    out = [results.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=30)
    timed = [r for r in out if "start" in r]
    base = min((r["start"] for r in timed), default=0.0)
    for r in timed:
        r["start"] -= base
        r["end"] -= base
    return sorted(out, key=lambda r: r.get("start", 0.0))


def _spin_cpu(stop: Any) -> None:
    x = 0
    while not stop.is_set():
        for i in range(10000):
            x += i * i


def spin_kernels(stop: Any, ready: Any, device: str = "cuda") -> None:
    """Launch kernels without pause until ``stop`` (the positive control of a disturbance probe)."""
    if device.startswith("cuda"):
        torch.cuda.set_device(0)
    a = torch.randn(2048, 2048, device=device)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    ready.set()
    while not stop.is_set():
        for _ in range(20):
            a = torch.tanh(a @ a * 1e-3)
        if device.startswith("cuda"):
            torch.cuda.synchronize()


def churn_processes(stop: threading.Event, target: Any, args: tuple, width: int, started: list[float]) -> None:
    """Run ``target(*args)`` in fresh forked processes, ``width`` at a time, until ``stop``
    (``started``: when each began)."""
    running: list[Any] = []
    while not stop.is_set():
        running = [p for p in running if p.is_alive()]
        while len(running) < width:
            p = CTX.Process(target=target, args=args)
            p.start()
            running.append(p)
            started.append(time.time())
        time.sleep(0.01)
    for p in running:
        p.join(timeout=60)


def _start_at_once(warm: bool) -> None:
    """A context started at once (``_starter`` without the wait and the report)."""
    go = CTX.Event()
    go.set()
    _starter(go, CTX.Queue(), warm)


def _timer(conn: Any) -> None:
    torch.cuda.set_device(0)
    dev = timing.device_module("cuda")
    flush = torch.empty(timing.FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    n = 1 << 24
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    a, b = torch.randn(4096, 4096, device="cuda"), torch.randn(4096, 4096, device="cuda")
    work = {
        "add_16M": lambda: torch.add(x, y, out=out),
        "matmul_4096": lambda: torch.mm(a, b),
        "triton_axpy_16M": lambda: _axpy[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024),
    }
    for call in work.values():
        for _ in range(5):
            call()
    torch.cuda.synchronize()
    fills, cushion_ms = timing.cushion(dev, flush, 1.0)
    conn.send({"fills": fills, "cushion_ms": cushion_ms, "device": torch.cuda.get_device_name(0)})
    rep = 0
    while True:
        msg = conn.recv()
        if msg == "quit":
            return
        calls = int(msg)
        times: dict[str, list[float]] = {k: [] for k in work}
        host: dict[str, list[float]] = {k: [] for k in work}
        for _ in range(calls):
            for name, call in work.items():
                rep += 1
                ms, host_ms = timing.timed_call_host(call, dev, flush, fills, timing.STREAM_MODE, rep)
                times[name].append(ms)
                host[name].append(host_ms)
        conn.send({"times": times, "host": host})


def disturbance(rounds: int, calls: int, width: int) -> dict[str, Any]:
    parent, child = CTX.Pipe()
    timer = CTX.Process(target=_timer, args=(child,))
    timer.start()
    setup = parent.recv()
    order = [m for _ in range(rounds) for m in random.sample(MODES, len(MODES))]
    samples: list[dict[str, Any]] = []
    for i, mode in enumerate(order):
        stop_mp = CTX.Event()
        stop_th = threading.Event()
        helpers: list[Any] = []
        started: list[float] = []
        churn = None
        if mode in ("context", "context_warm"):
            args = (stop_th, _start_at_once, (mode == "context_warm",), width, started)
            churn = threading.Thread(target=churn_processes, args=args)
            churn.start()
            time.sleep(0.3)  # the first contexts are under way
        elif mode == "cpu":
            helpers = [CTX.Process(target=_spin_cpu, args=(stop_mp,)) for _ in range(width)]
        elif mode == "kernels":
            ready = CTX.Event()
            helpers = [CTX.Process(target=spin_kernels, args=(stop_mp, ready))]
        for h in helpers:
            h.start()
        if mode == "kernels":
            ready.wait(60)
        t0 = time.time()
        parent.send(calls)
        got = parent.recv()
        window = time.time() - t0
        stop_mp.set()
        stop_th.set()
        if churn is not None:
            churn.join()
        for h in helpers:
            h.join(timeout=30)
        in_window = sum(1 for s in started if t0 <= s <= t0 + window)
        samples.append({"round": i, "mode": mode, "window_s": window, "contexts_started": in_window, **got})
        print(f"round {i} {mode}: {window:.2f}s, {in_window} contexts started", flush=True)
    parent.send("quit")
    timer.join(timeout=30)
    return {"setup": setup, "samples": samples}


def summarise(dist: dict[str, Any]) -> list[str]:
    """The disturbance table: each mode's timings of each workload against the idle rounds'."""
    lines = [
        "| mode | workload | rounds | median ms | trimmed mean ms | vs idle (trimmed) | p90 ms | host p50 ms |",
        "|---|---|---|---|---|---|---|---|",
    ]
    by: dict[tuple[str, str], list[float]] = {}
    host: dict[tuple[str, str], list[float]] = {}
    for s in dist["samples"]:
        for w, ts in s["times"].items():
            by.setdefault((s["mode"], w), []).extend(ts)
            host.setdefault((s["mode"], w), []).extend(s["host"][w])
    workloads = sorted({w for _, w in by})
    for w in workloads:
        base = timing.trimmed_mean(by[("idle", w)], timing.TRIM)
        for m in MODES:
            if (m, w) not in by:
                continue  # not sampled in this run
            ts = sorted(by[(m, w)])
            tm = timing.trimmed_mean(ts, timing.TRIM)
            rounds = sum(1 for s in dist["samples"] if s["mode"] == m)
            lines.append(
                f"| {m} | {w} | {rounds} | {statistics.median(ts):.4f} | {tm:.4f} | {tm / base - 1:+.2%} | "
                f"{ts[int(0.9 * (len(ts) - 1))]:.4f} | {statistics.median(host[(m, w)]):.3f} |"
            )
    # per-round spread of the idle control, to read the other rows against
    for w in workloads:
        per_round = [timing.trimmed_mean(s["times"][w], timing.TRIM) for s in dist["samples"] if s["mode"] == "idle"]
        lo, hi = min(per_round), max(per_round)
        lines.append(f"\nidle rounds, {w}: trimmed means {lo:.4f}-{hi:.4f} ms ({hi / lo - 1:.2%} apart)")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out-dir", default=".")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--calls", type=int, default=150, help="timed calls per workload per round")
    parser.add_argument("--width", type=int, default=4, help="processes disturbing at once")
    args = parser.parse_args()
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    began = time.time()
    # one process holds a context throughout, as a worker's kept judging child does
    holder_stop = CTX.Event()
    holder_ready = CTX.Event()
    holder = CTX.Process(target=_spin_kernels_idle, args=(holder_stop, holder_ready))
    holder.start()
    holder_ready.wait(60)
    start_cost(1, True)  # compiles the warm-up kernels into the Triton cache (not counted)
    starts: dict[str, Any] = {}
    for label, conc, warm in (("sequential", 1, False), ("sequential", 1, False), ("sequential", 1, True)):
        starts.setdefault(f"{label}{'_warm' if warm else ''}", []).extend(start_cost(conc, warm))
    for conc in (4, 8):
        starts[f"concurrent_{conc}"] = start_cost(conc, False)
        starts[f"concurrent_{conc}_warm"] = start_cost(conc, True)
    # fewer hardware work queues per context: less for the driver to set up (a guess to test)
    one_queue = {"CUDA_DEVICE_MAX_CONNECTIONS": "1"}
    starts["sequential_1_queue"] = start_cost(1, False, one_queue) + start_cost(1, False, one_queue)
    starts["concurrent_4_1_queue"] = start_cost(4, False, one_queue)
    print("\n".join(start_table(starts)), flush=True)
    dist = disturbance(args.rounds, args.calls, args.width)
    holder_stop.set()
    holder.join(timeout=30)
    meta = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "device": dist["setup"].get("device", ""),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "cores": os.cpu_count(),
        "args": vars(args),
        "elapsed_s": round(time.time() - began, 1),
    }
    (out_dir / "context_probe.json").write_text(json.dumps({"meta": meta, "starts": starts, **dist}, indent=1))
    lines = [
        f"# Context starts next to a timing ({meta['date']})",
        "",
        f"- {json.dumps(meta)}",
        "",
        "## Start cost",
        "",
    ]
    lines += start_table(starts)
    lines += ["", "## Disturbance", "", f"cushion: {dist['setup']}", "", *summarise(dist)]
    (out_dir / "context_probe.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def start_table(starts: dict[str, list[dict[str, float]]]) -> list[str]:
    """One row per start case: the median context start, the median warm-up, and how long all took."""
    lines = ["| case | processes | init+context s (median) | warm s (median) | all done s |", "|---|---|---|---|---|"]
    for key, rows in starts.items():
        ctx = [r["context_s"] + r["init_s"] for r in rows if "context_s" in r]
        warm = [r["warm_s"] for r in rows if "warm_s" in r]
        timed = [r for r in rows if "start" in r]
        span = max(r["end"] for r in timed) - min(r["start"] for r in timed) if timed else float("nan")
        median = f"{statistics.median(ctx):.3f}" if ctx else "failed"
        lines.append(
            f"| {key} | {len(rows)} | {median} | {f'{statistics.median(warm):.3f}' if warm else '-'} | {span:.3f} |"
        )
    return lines


def _spin_kernels_idle(stop: Any, ready: Any) -> None:
    torch.cuda.set_device(0)
    torch.empty(1, device="cuda")
    ready.set()
    stop.wait()


if __name__ == "__main__":
    main()
