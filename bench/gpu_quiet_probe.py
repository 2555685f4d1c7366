"""Why do some references time slower when workers share a device? A probe on one GPU.

At eight workers per H100 a few PyTorch references (``transpose``, ``attention``,
``causal_softmax``) sometimes timed 5-12 % slower than with one worker, never faster, while the
Triton kernels next to them held within 0.5 %. The device is held alone while timing (the other
workers' children are stopped), so this probe separates three suspects, timing each task's
reference and reference solution with the evaluator's own primitives (``placement.InputArena``:
a fresh random input place per call and a ring of kept outputs; ``timing.timed_call_host``: L2
flush, launch cushion, device events; the trimmed mean):

1. *disturbance* (part A): one timer; during each round other processes do one thing the
   lease does not stop today: nothing (``idle``), start a device context and exit
   (``churn``: what spares and finished children do), allocate, touch and free device memory
   through the caching allocator and ``empty_cache`` (``alloc_free``: what an idle judge
   returning its memory does), hold memory while stopped (``stopped``: paused neighbours), or
   launch kernels (``kernels``: the positive control). Rounds are shuffled.
2. *the arena's size* (part B): the same timer alternates between the arena one worker gets
   (2 GB of slack, 8 kept outputs) and the one eight workers got (64 MB, one kept output).
3. *where the process's memory came from* (part C): fresh timers, each started either on a
   device with nothing else on it (``empty``) or next to processes that hold most of the device's
   memory in chunks with holes between them (``crowded``); each times idle rounds only.

Writes ``quiet_probe.json`` (every timed call) and ``quiet_probe.md`` to ``--out-dir``.

    python bench/gpu_quiet_probe.py --out-dir $OUT
    TRITON_INTERPRET=1 python bench/gpu_quiet_probe.py --dry --out-dir /tmp/qp   (CPU, small shapes: checks the script)
"""

from __future__ import annotations

import argparse
import datetime
import json
import multiprocessing as mp
import os
import random
import signal
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
from _benchutil import load_module  # noqa: E402
from gpu_context_probe import churn_processes, spin_kernels  # noqa: E402  (the positive control, as there)

from ascend_kernel_gym.evaluation import placement, timing  # noqa: E402
from ascend_kernel_gym.evaluation.inputs import make_inputs  # noqa: E402
from ascend_kernel_gym.tasks import get_task  # noqa: E402

CTX = mp.get_context("fork")
TASKS = ("core/L1/transpose", "core/L2/attention", "core/L2/causal_softmax")
MODES = ("idle", "churn", "alloc_free", "stopped", "kernels")
#: (slack bytes, kept outputs): what one worker's arena gets on an empty 80 GB device, and what
#: eight workers' got for these tasks
CONFIGS = {"wide": (2 << 30, 8), "narrow": (64 << 20, 1)}
GIB = 1 << 30


def _load(task_id: str, small: bool, device: torch.device) -> tuple[Any, Any, Any]:
    """The task's module (its inputs), its reference model and its reference solution's model."""
    task = get_task(task_id)
    stem = task_id.replace("/", "_")
    mod = load_module(str(task.path), f"task_{stem}")
    if small:
        for key, value in mod.TASK["profiles"]["small"].items():
            setattr(mod, key, value)
    sol = load_module(str(task.solution_path), f"solution_{stem}")
    init = mod.get_init_inputs()
    torch.manual_seed(0)
    ref = mod.Model(*init).to(device).eval()
    torch.manual_seed(0)
    new = sol.ModelNew(*init).to(device).eval()
    return mod, ref, new


def _timer(conn: Any, device_name: str, small: bool, configs: list[str], seed: int) -> None:
    """Build every task's arenas for ``configs`` and time on request: ``(config, calls)`` -> times."""
    device = torch.device(device_name)
    if device.type == "cuda":
        torch.cuda.set_device(0)
    rng = random.Random(seed)
    dev = timing.device_module(device.type)
    flush = torch.empty(
        max(1, (timing.FLUSH_BYTES if device.type == "cuda" else 1 << 20) // 4), dtype=torch.int32, device=device
    )
    arenas: dict[tuple[str, str, str], placement.InputArena] = {}
    with torch.no_grad():
        for task_id in TASKS:
            mod, ref, new = _load(task_id, small, device)

            def draw(s: int, mod: Any = mod) -> list[Any]:
                return make_inputs(mod, s, "task", device)

            for config in configs:
                slack, ring = CONFIGS[config]
                if small:
                    slack = min(slack, 1 << 20)
                for which, model in (("ref", ref), ("new", new)):
                    source = placement.RoundInputs(draw, rng.getrandbits(62))
                    arenas[(task_id, which, config)] = placement.InputArena(
                        model, source, rng, slack=slack, output_ring=ring
                    )
            for which in ("ref", "new"):  # compile and warm both
                for config in configs:
                    for k in range(3):
                        arenas[(task_id, which, config)].prepare(k)()
        dev.synchronize()
        fills, cushion_ms = timing.cushion(dev, flush, 1.0) if device.type == "cuda" else (1, 0.0)
        conn.send({"fills": fills, "cushion_ms": cushion_ms, "pid": os.getpid(),
                   "device": torch.cuda.get_device_name(0) if device.type == "cuda" else "cpu"})  # fmt: skip
        rep = 0
        while True:
            msg = conn.recv()
            if msg == "quit":
                return
            config, calls = msg
            times: dict[str, list[float]] = {}
            for _ in range(calls):
                rep += 1
                for task_id in TASKS:
                    for which in rng.sample(("ref", "new"), 2):
                        call = arenas[(task_id, which, config)].prepare(rep)
                        ms, _host = timing.timed_call_host(call, dev, flush, fills, timing.STREAM_MODE, rep)
                        times.setdefault(f"{task_id.split('/')[-1]}:{which}", []).append(round(ms, 5))
            conn.send(times)


class Timer:
    def __init__(self, device: str, small: bool, configs: list[str], seed: int) -> None:
        self.conn, child = CTX.Pipe()
        self.proc = CTX.Process(target=_timer, args=(child, device, small, configs, seed))
        self.proc.start()
        self.setup = self.conn.recv()

    def time(self, config: str, calls: int) -> dict[str, list[float]]:
        self.conn.send((config, calls))
        return self.conn.recv()

    def close(self) -> None:
        self.conn.send("quit")
        self.proc.join(timeout=60)


# --- what other processes do -------------------------------------------------------------------


def _context_once(device: str, touch_bytes: int) -> None:
    x = torch.empty(touch_bytes, dtype=torch.uint8, device=device)
    x.fill_(1)
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _alloc_free(stop: Any, ready: Any, device: str) -> None:
    _context_once(device, 1 << 20)
    ready.set()
    while not stop.is_set():
        x = torch.empty(2 * GIB, dtype=torch.uint8, device=device)
        x.fill_(2)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        del x
        if device.startswith("cuda"):
            torch.cuda.empty_cache()
        time.sleep(0.005)


def _hold(stop: Any, ready: Any, device: str, chunks: int, chunk_bytes: int, holes: bool) -> None:
    """Hold ``chunks`` chunks of device memory (every other one given back with ``holes``)."""
    kept = [torch.empty(chunk_bytes, dtype=torch.uint8, device=device) for _ in range(chunks)]
    for x in kept:
        x.fill_(3)
    if holes:
        kept = kept[::2]
        if device.startswith("cuda"):
            torch.cuda.empty_cache()
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    ready.set()
    stop.wait()


def _start(target: Any, *args: Any) -> tuple[Any, Any, Any]:
    stop, ready = CTX.Event(), CTX.Event()
    proc = CTX.Process(target=target, args=(stop, ready, *args))
    proc.start()
    if not ready.wait(120):
        raise RuntimeError(f"{target.__name__} did not get ready")
    return proc, stop, ready


def _end(helpers: list[tuple[Any, Any, Any]]) -> None:
    for proc, stop, _ in helpers:
        os.kill(proc.pid, signal.SIGCONT)
        stop.set()
    for proc, _, _ in helpers:
        proc.join(timeout=60)


def disturbance(timer: Timer, device: str, rounds: int, calls: int, width: int, small: bool) -> list[dict[str, Any]]:
    order = [m for _ in range(rounds) for m in random.sample(MODES, len(MODES))]
    samples = []
    hold_gib = 0.05 if small else 4.0
    for i, mode in enumerate(order):
        helpers: list[tuple[Any, Any, Any]] = []
        started: list[float] = []
        stop_th = threading.Event()
        churn = None
        if mode == "churn":
            # fresh processes start a context, touch 1 GB and exit, ``width`` at a time
            args = (stop_th, _context_once, (device, GIB), width, started)
            churn = threading.Thread(target=churn_processes, args=args)
            churn.start()
            time.sleep(0.3)
        elif mode == "alloc_free":
            helpers = [_start(_alloc_free, device) for _ in range(2)]
        elif mode == "stopped":
            helpers = [_start(_hold, device, 1, int(hold_gib * GIB), False) for _ in range(8)]
            for proc, _, _ in helpers:
                os.kill(proc.pid, signal.SIGSTOP)
        elif mode == "kernels":
            helpers = [_start(spin_kernels, device)]
        t0 = time.time()
        times = timer.time("narrow", calls)
        window = time.time() - t0
        stop_th.set()
        if churn is not None:
            churn.join()
        _end(helpers)
        in_window = sum(1 for s in started if t0 <= s <= t0 + window)
        samples.append(
            {
                "part": "A",
                "round": i,
                "mode": mode,
                "window_s": round(window, 3),
                "contexts_started": in_window,
                "times": times,
            }
        )
        print(f"A round {i} {mode}: {window:.2f}s", flush=True)
    return samples


def configs_part(timer: Timer, rounds: int, calls: int) -> list[dict[str, Any]]:
    samples = []
    for i in range(rounds):
        for config in random.sample(list(CONFIGS), len(CONFIGS)):
            samples.append({"part": "B", "round": i, "mode": config, "times": timer.time(config, calls)})
            print(f"B round {i} {config}", flush=True)
    return samples


def fresh_timers(device: str, small: bool, timers: int, calls: int, crowd_gib: float) -> list[dict[str, Any]]:
    samples = []
    conditions = [c for _ in range(timers) for c in ("empty", "crowded")]
    for i, condition in enumerate(conditions):
        helpers: list[tuple[Any, Any, Any]] = []
        if condition == "crowded":
            chunk = (8 << 20) if small else (160 << 20)
            per_proc = max(2, int(crowd_gib * GIB / 8 / chunk) * 2)  # half of them given back
            helpers = [_start(_hold, device, per_proc, chunk, True) for _ in range(8)]
        timer = Timer(device, small, ["narrow"], seed=1000 + i)
        times = [timer.time("narrow", calls) for _ in range(2)]
        timer.close()
        _end(helpers)
        merged: dict[str, list[float]] = {}
        for t in times:
            for k, v in t.items():
                merged.setdefault(k, []).extend(v)
        samples.append({"part": "C", "round": i, "mode": condition, "times": merged})
        print(f"C timer {i} {condition}", flush=True)
    return samples


# --- the report --------------------------------------------------------------------------------


def _pooled(samples: list[dict[str, Any]], part: str) -> dict[tuple[str, str], list[float]]:
    by: dict[tuple[str, str], list[float]] = {}
    for s in samples:
        if s["part"] == part:
            for work, ts in s["times"].items():
                by.setdefault((s["mode"], work), []).extend(ts)
    return by


def table(samples: list[dict[str, Any]], part: str, modes: list[str], base: str) -> list[str]:
    """Each mode's trimmed mean per workload against ``base``'s, and the spread of its rounds."""
    by = _pooled(samples, part)
    lines = [
        "| workload | mode | rounds | trimmed mean ms | vs " + base + " | rounds' trimmed means ms |",
        "|---|---|---|---|---|---|",
    ]
    for work in sorted({w for _, w in by}):
        if (base, work) not in by:
            continue
        ref = timing.trimmed_mean(by[(base, work)], timing.TRIM)
        for mode in modes:
            if (mode, work) not in by:
                continue
            tm = timing.trimmed_mean(by[(mode, work)], timing.TRIM)
            per = [
                timing.trimmed_mean(s["times"][work], timing.TRIM)
                for s in samples
                if s["part"] == part and s["mode"] == mode
            ]
            spread = ", ".join(f"{p:.3f}" for p in per)
            lines.append(f"| {work} | {mode} | {len(per)} | {tm:.4f} | {tm / ref - 1:+.2%} | {spread} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out-dir", default=".")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per mode in parts A and B")
    parser.add_argument("--calls", type=int, default=60, help="timed calls of each model per round")
    parser.add_argument("--width", type=int, default=4, help="processes starting contexts at once (churn)")
    parser.add_argument("--timers", type=int, default=4, help="fresh timers per condition in part C")
    parser.add_argument(
        "--crowd-gib", type=float, default=30.0, help="device memory the crowders keep (twice that first)"
    )
    parser.add_argument("--parts", default="ABC")
    parser.add_argument("--dry", action="store_true", help="CPU, small shapes (TRITON_INTERPRET=1): checks the script")
    args = parser.parse_args()
    os.environ.setdefault("CUDA_DEVICE_MAX_CONNECTIONS", "1")  # as in the evaluator's children
    device = "cpu" if args.dry else "cuda"
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    began = time.time()
    samples: list[dict[str, Any]] = []
    setup: dict[str, Any] = {}
    if "A" in args.parts or "B" in args.parts:
        timer = Timer(device, args.dry, list(CONFIGS), seed=7)
        setup = timer.setup
        if "A" in args.parts:
            samples += disturbance(timer, device, args.rounds, args.calls, args.width, args.dry)
        if "B" in args.parts:
            samples += configs_part(timer, args.rounds, args.calls)
        timer.close()
    if "C" in args.parts:
        samples += fresh_timers(device, args.dry, args.timers, args.calls, 0.05 if args.dry else args.crowd_gib)
    meta = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "setup": setup,
        "torch": torch.__version__,
        "cores": os.cpu_count(),
        "args": vars(args),
        "elapsed_s": round(time.time() - began, 1),
    }
    (out_dir / "quiet_probe.json").write_text(json.dumps({"meta": meta, "samples": samples}))
    lines = [
        f"# What moves a reference's timing next to other processes ({meta['date']})",
        "",
        f"- {json.dumps(meta)}",
        "",
    ]
    if "A" in args.parts:
        lines += [
            "## A: other processes during the rounds (narrow arena)",
            "",
            *table(samples, "A", list(MODES), "idle"),
            "",
        ]
    if "B" in args.parts:
        lines += ["## B: the arena's size (idle)", "", *table(samples, "B", list(CONFIGS), "wide"), ""]
    if "C" in args.parts:
        lines += ["## C: fresh timers on an empty or a crowded device (narrow arena, idle)", "",
                  *table(samples, "C", ["empty", "crowded"], "empty"), ""]  # fmt: skip
    (out_dir / "quiet_probe.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
