"""Where does the run-to-run speedup spread of a few tasks come from? A probe on one GPU.

On an H200 most tasks of the evaluator's table (bench/results/gpu_evaluator_h200.md) repeat their
speedup within 3% over 5 evaluations; a few do not. This script separates three candidate causes,
timing with the evaluator's own primitives (``timing.timed_call``: L2 flush, launch cushion,
device events) so that the numbers are comparable with the evaluator's:

1. *placement*: one process, ``--placements`` input allocations per model, timed in
   ``--cycles`` passes. A placement effect shows as columns that differ from each other but
   agree across cycles; drift shows as cycles that differ.
2. *process*: the same matrix for chosen models in fresh processes, to see whether a level is
   fixed per process (for example by where the driver maps its memory).
3. *heat*: the transpose reference and kernel interleaved for ``--heat-s`` seconds of
   back-to-back load, then again after ``--cool-s`` seconds idle, with the GPU's temperatures and
   clocks sampled by ``nvidia-smi`` throughout.

4. *perturb* (``--perturb TASKS``, run alone): in each of ``--processes`` fresh processes the
   models are timed in rounds, and before each round one thing is moved: nothing (control),
   the parameters (cloned to new allocations behind a spacer of random size), or the memory
   the model allocates during a call (cached blocks released, a spacer of random size held).
   A level fixed per process that moves with one of them names its cause; the
   ``attention_head`` solution's level (28.6-30.5 ms between evaluations, within 0.5% inside one,
   at a steady SM clock) is what this is for.

Writes ``timing_probe.json`` (every sample) and ``timing_probe.md`` (summary) to ``--out-dir``.

    python bench/gpu_timing_probe.py --out-dir $OUT
    python bench/gpu_timing_probe.py --out-dir $OUT --perturb L3/attention_head --processes 3
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import _bootstrap  # noqa: E402, F401  (before the package: works without gymnasium)
import torch  # noqa: E402
from _benchutil import load_module  # noqa: E402

from ascend_kernel_gym.evaluation import timing  # noqa: E402

SUITE = ROOT / "ascend_kernel_gym" / "tasks" / "suites" / "core"
SMI_FIELDS = (
    "timestamp,temperature.gpu,temperature.memory,clocks.sm,clocks.mem,power.draw,clocks_throttle_reasons.active"
)


_SOLUTIONS: dict[str, Any] = {}


def _solution(task: str) -> Any:
    """The bundled solution module of ``task`` (loaded once, so its compiled kernels can be inspected)."""
    if task not in _SOLUTIONS:
        level, name = task.split("/")
        _SOLUTIONS[task] = load_module(SUITE / "solutions" / level / f"{name}.py", f"probe_sol_{name}")
    return _SOLUTIONS[task]


def build(task: str) -> dict[str, tuple[torch.nn.Module, Any]]:
    """``{"<task>:ref": (model, task_module), "<task>:sol": ...}`` on the GPU with the full profile."""
    level, name = task.split("/")
    task_mod = load_module(SUITE / "tasks" / level / f"{name}.py", f"probe_task_{name}")
    sol_mod = _solution(task)
    torch.manual_seed(0)
    ref = task_mod.Model(*task_mod.get_init_inputs()).cuda().eval()
    sol = sol_mod.ModelNew(*task_mod.get_init_inputs()).cuda().eval()
    sol.load_state_dict(ref.state_dict(), strict=False)
    return {f"{name}:ref": (ref, task_mod), f"{name}:sol": (sol, task_mod)}


class Placements:
    """``count`` input sets of one model, each a separate allocation kept alive, with its last output."""

    def __init__(self, model: torch.nn.Module, task_mod: Any, count: int) -> None:
        torch.manual_seed(1)
        self.model = model
        self.inputs = []
        self.spacers = []
        for _ in range(count):
            with torch.device("cuda"):  # drawn on the GPU: a CPU randn of 512 MB takes seconds
                self.inputs.append(list(task_mod.get_inputs()))
            self.spacers.append(torch.empty(48 * 1024 * 1024, dtype=torch.uint8, device="cuda"))
        self.outputs: list[Any] = [None] * count

    def call(self, p: int) -> Any:
        def run() -> Any:
            self.outputs[p] = self.model(*self.inputs[p])
            return self.outputs[p]

        return run


def timed_median(call: Any, flush: torch.Tensor, fills: int, reps: int) -> float:
    times = [timing.timed_call(call, torch.cuda, flush, fills, timing.STREAM_MODE, i) for i in range(reps)]
    return statistics.median(times)


def placement_matrix(models: dict[str, tuple[torch.nn.Module, Any]], placements: int, cycles: int, reps: int) -> dict:
    flush = torch.empty(timing.FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    fills, _ = timing.cushion(torch.cuda, flush, timing.CUSHION_MS)
    out: dict[str, Any] = {}
    for key, (model, task_mod) in models.items():
        sets = Placements(model, task_mod, placements)
        with torch.no_grad():
            for p in range(placements):  # warm-up (compile, clocks)
                for _ in range(3):
                    sets.call(p)()
            torch.cuda.synchronize()
            rows = []
            for _ in range(cycles):
                cells = [timed_median(sets.call(p), flush, fills, reps) for p in range(placements)]
                rows.append({"t": time.time(), "ms": cells})
        out[key] = rows
        del sets
        torch.cuda.empty_cache()
    return out


def heat_run(models: dict[str, tuple[torch.nn.Module, Any]], seconds: float, window_s: float) -> list[dict]:
    """Interleave the models on 2 placements each for ``seconds``; one median per model per window."""
    flush = torch.empty(timing.FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    fills, _ = timing.cushion(torch.cuda, flush, timing.CUSHION_MS)
    sets = {key: Placements(model, mod, 2) for key, (model, mod) in models.items()}
    windows = []
    start = time.perf_counter()
    i = 0
    with torch.no_grad():
        while time.perf_counter() - start < seconds:
            window_start = time.perf_counter()
            samples: dict[str, list[float]] = {key: [] for key in sets}
            while time.perf_counter() - window_start < window_s:
                for key, s in sets.items():
                    samples[key].append(timing.timed_call(s.call(i % 2), torch.cuda, flush, fills, "stream", i))
                i += 1
            windows.append({"t": time.time(), **{key: statistics.median(v) for key, v in samples.items()}})
    return windows


def summarise_matrix(rows: list[dict]) -> dict[str, float]:
    grid = [r["ms"] for r in rows]
    flat = [v for row in grid for v in row]
    med = statistics.median(flat)
    col_means = [statistics.mean(col) for col in zip(*grid, strict=True)]
    row_means = [statistics.mean(row) for row in grid]
    return {
        "median_ms": med,
        "range_pct": 100 * (max(flat) - min(flat)) / med,
        "between_placements_pct": 100 * (max(col_means) - min(col_means)) / med,
        "between_cycles_pct": 100 * (max(row_means) - min(row_means)) / med,
    }


#: what is moved before a round of the perturbation experiment
PERTURBATIONS = ("none", "parameters", "scratch", "local_memory")
CU_LIMIT_STACK_SIZE = 0


def _move_local_memory(rng: random.Random) -> bool:
    """Make the driver allocate the context's local memory (spills, stacks) afresh.

    A changed per-thread stack limit makes the CUDA driver reallocate the context's local memory
    backing, where register spills live; False where the driver API cannot be reached.
    """
    import ctypes

    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    torch.cuda.synchronize()
    size = ctypes.c_size_t(1024 + 16 * rng.randrange(1, 193))
    return cuda.cuCtxSetLimit(CU_LIMIT_STACK_SIZE, size) == 0


def kernel_info(module: Any) -> list[dict[str, Any]]:
    """Registers and spills of every compiled Triton kernel of ``module`` (what this run compiled)."""
    found = []
    for name, fn in vars(module).items():
        for caches in getattr(fn, "device_caches", {}).values():
            kernels = caches[0] if isinstance(caches, tuple) else caches
            for kernel in getattr(kernels, "values", list)():
                init = getattr(kernel, "_init_handles", None)
                if init is not None:
                    init()
                meta = getattr(kernel, "metadata", None)
                found.append(
                    {
                        "kernel": name,
                        "n_regs": getattr(kernel, "n_regs", None),
                        "n_spills": getattr(kernel, "n_spills", None),
                        "num_warps": getattr(meta, "num_warps", None),
                        "shared": getattr(meta, "shared", None),
                    }
                )
    return found


def _spacer(rng: random.Random) -> torch.Tensor:
    return torch.empty(rng.randrange(1, 65) << 20, dtype=torch.uint8, device="cuda")


def perturb_rounds(models: dict[str, tuple[torch.nn.Module, Any]], rounds: int, reps: int, seed: int) -> dict:
    """Per model, ``rounds`` timed cells; before each, one of ``PERTURBATIONS`` in turn."""
    rng = random.Random(seed)
    flush = torch.empty(timing.FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    fills, _ = timing.cushion(torch.cuda, flush, timing.CUSHION_MS)
    kept: list[torch.Tensor] = []  # spacers stay alive, so later allocations land elsewhere
    out: dict[str, list[dict[str, Any]]] = {}
    with torch.no_grad():
        for key, (model, task_mod) in models.items():
            sets = Placements(model, task_mod, 1)
            for _ in range(3):
                sets.call(0)()
            cells = []
            for r in range(rounds):
                kind = PERTURBATIONS[r % len(PERTURBATIONS)]
                if kind == "parameters":
                    kept.append(_spacer(rng))
                    for parameter in model.parameters():
                        parameter.data = parameter.data.clone()
                elif kind == "scratch":
                    torch.cuda.empty_cache()
                    kept.append(_spacer(rng))
                elif kind == "local_memory" and not _move_local_memory(rng):
                    kind = "local_memory (not moved)"
                sets.call(0)()  # the call after a move allocates afresh outside the timed cell
                cells.append({"perturb": kind, "ms": timed_median(sets.call(0), flush, fills, reps)})
            out[key] = cells
            del sets
    return out


def summarise_perturbation(cells: list[dict[str, Any]]) -> dict[str, float]:
    """Mean change from the previous cell (% of the median), by what was moved in between.

    A level that persists until something moves shows up as steps after that kind of move only;
    steps after ``none`` are the noise (and drift) of back-to-back cells.
    """
    overall = statistics.median(c["ms"] for c in cells)
    steps: dict[str, list[float]] = {}
    for before, cell in itertools.pairwise(cells):
        steps.setdefault(cell["perturb"], []).append(abs(cell["ms"] - before["ms"]))
    return {kind: 100 * statistics.fmean(values) / overall for kind, values in steps.items()}


def child_main(args: argparse.Namespace) -> None:
    models: dict[str, Any] = {}
    tasks = args.perturb or args.process_tasks
    for task in tasks.split(","):
        models.update({k: v for k, v in build(task).items() if k.endswith(":sol") or args.with_ref})
    if args.perturb:
        result = perturb_rounds(models, args.rounds, args.reps, seed=os.getpid())
        result["kernels"] = [info for task in args.perturb.split(",") for info in kernel_info(_solution(task))]
    else:
        result = placement_matrix(models, args.placements, args.cycles, args.reps)
    print("PROBE_JSON " + json.dumps(result), flush=True)


def _fresh_processes(args: argparse.Namespace, extra: list[str]) -> list[dict[str, Any]]:
    found = []
    for _ in range(args.processes):
        proc = subprocess.run(
            [sys.executable, __file__, "--child", "--reps", str(args.reps), "--with-ref", *extra],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        line = [x for x in proc.stdout.splitlines() if x.startswith("PROBE_JSON ")]
        found.append(json.loads(line[0][11:]) if line else {"error": proc.stderr[-2000:]})
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out-dir", default=os.environ.get("OUT", "."))
    parser.add_argument("--tasks", default="L1/transpose,L1/matmul_transposed_b,L1/relu,L3/attention_head")
    parser.add_argument("--process-tasks", default="L1/matmul_transposed_b,L1/transpose")
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--placements", type=int, default=4)
    parser.add_argument("--cycles", type=int, default=3)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--heat-s", type=float, default=20.0)
    parser.add_argument("--cool-s", type=float, default=10.0)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--with-ref", action="store_true", help="fresh processes time the references too")
    parser.add_argument("--perturb", default=None, help="run only the perturbation experiment on these tasks")
    parser.add_argument("--rounds", type=int, default=12, help="timed cells per model in --perturb")
    args = parser.parse_args()
    if args.child:
        child_main(args)
        return
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    smi_log = open(out_dir / "timing_probe_smi.csv", "w")
    smi = subprocess.Popen(
        ["nvidia-smi", f"--query-gpu={SMI_FIELDS}", "--format=csv,nounits", "-lms", "250"], stdout=smi_log
    )
    report: dict[str, Any] = {
        "device": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "command": "python " + " ".join(sys.argv),
        "args": vars(args),
    }
    try:
        if args.perturb:
            print("perturbation rounds in fresh processes ...", flush=True)
            report["perturb"] = _fresh_processes(args, ["--perturb", args.perturb, "--rounds", str(args.rounds)])
        else:
            _probe_all(args, report)
    finally:
        smi.terminate()
        smi_log.close()
    (out_dir / "timing_probe.json").write_text(json.dumps(report, indent=1))
    (out_dir / "timing_probe.md").write_text(render(report))
    print(render(report))


def _probe_all(args: argparse.Namespace, report: dict[str, Any]) -> None:
    models: dict[str, Any] = {}
    for task in args.tasks.split(","):
        models.update(build(task))
    print("placement matrix ...", flush=True)
    report["placement"] = placement_matrix(models, args.placements, args.cycles, args.reps)
    print("fresh processes ...", flush=True)
    report["processes"] = _fresh_processes(
        args, ["--process-tasks", args.process_tasks, "--placements", str(args.placements), "--cycles", "2"]
    )
    print("heat ...", flush=True)
    pair = {k: v for k, v in models.items() if k.startswith("transpose:")}
    report["heat"] = heat_run(pair, args.heat_s, 1.0)
    time.sleep(args.cool_s)
    report["after_cool"] = heat_run(pair, 5.0, 1.0)


def render_perturbation(processes: list[dict[str, Any]]) -> list[str]:
    lines = [
        "## Perturbation inside one process: ms of each timed cell, by what moved before it",
        "",
        "| process | model | moved before the cell | cells (ms) | mean step from the previous cell |",
        "|---|---|---|---|---|",
    ]
    for i, proc in enumerate(processes):
        if "error" in proc:
            lines.append(f"| {i} | failed: {proc['error'][-200:]!r} | | | |")
            continue
        for key, cells in proc.items():
            if key == "kernels":
                continue
            spreads = summarise_perturbation(cells)
            for kind, step in spreads.items():
                values = ", ".join(f"{c['ms']:.4f}" for c in cells if c["perturb"] == kind)
                lines.append(f"| {i} | {key} | {kind} | {values} | {step:.2f}% |")
    kernels = next((proc["kernels"] for proc in processes if proc.get("kernels")), [])
    if kernels:
        lines += ["", "## Compiled kernels of the solution (first process)", "",
                  "| kernel | registers | spills | warps | shared bytes |", "|---|---|---|---|---|"]  # fmt: skip
        for k in kernels:
            lines.append(f"| {k['kernel']} | {k['n_regs']} | {k['n_spills']} | {k['num_warps']} | {k['shared']} |")
    return lines


def render(report: dict[str, Any]) -> str:
    lines = [f"# Timing probe on {report['device']} (torch {report['torch']})", ""]
    if "date" in report:
        lines += [f"- date: {report['date']}", f"- command: `{report['command']}`", ""]
    if "perturb" in report:
        return "\n".join(lines + render_perturbation(report["perturb"])) + "\n"
    lines += ["## One process: placements x cycles", "", "| model | median ms | range | between placements | "
              "between cycles |", "|---|---|---|---|---|"]  # fmt: skip
    for key, rows in report["placement"].items():
        s = summarise_matrix(rows)
        lines.append(
            f"| {key} | {s['median_ms']:.4f} | {s['range_pct']:.1f}% | {s['between_placements_pct']:.1f}% | "
            f"{s['between_cycles_pct']:.1f}% |"
        )
    lines += ["", "## Fresh processes: ms per placement (mean over cycles), in allocation order", ""]
    for i, proc in enumerate(report["processes"]):
        if "error" in proc:
            lines.append(f"- process {i}: failed: {proc['error'][-300:]}")
            continue
        for key, rows in proc.items():
            cols = [statistics.mean(col) for col in zip(*(r["ms"] for r in rows), strict=True)]
            lines.append(f"- process {i}, {key}: " + ", ".join(f"{v:.4f}" for v in cols))
    lines += ["", "## Heat: transpose ref and kernel interleaved (1 s windows), then after the idle pause", ""]
    for name in ("heat", "after_cool"):
        series = report.get(name, [])
        for key in [k for k in (series[0] if series else {}) if k != "t"]:
            lines.append(f"- {name} {key}: " + ", ".join(f"{w[key]:.3f}" for w in series))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
