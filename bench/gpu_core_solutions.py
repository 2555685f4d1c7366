"""Check the bundled reference solutions of a suite on a real device, at the device-sized profile.

The test suite checks every reference solution on the CPU interpreter with the ``small`` profile;
this script is the device-side counterpart: the ``full`` profile (GPU/NPU sizes), compiled Triton
kernels, the reference's parameters loaded into ``ModelNew``, and a side-by-side timing (median
of CUDA/NPU events, reference and solution measured in the same run).

    python bench/gpu_core_solutions.py --device cuda --levels 1
    python bench/gpu_core_solutions.py --device npu --tasks core/L1/softmax core/L1/layernorm
    python bench/gpu_core_solutions.py --device cpu --profile small   # dry run on Triton's interpreter

Exit code 0 when every selected solution matches its reference, 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import traceback
from typing import Any


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default="core")
    parser.add_argument("--levels", type=int, nargs="*", default=None, help="levels to check (default: all)")
    parser.add_argument("--tasks", nargs="*", default=None, help="task ids to check (default: all selected)")
    parser.add_argument("--profile", default="full")
    parser.add_argument("--device", default="cuda", choices=("cuda", "npu", "cpu"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--trials", type=int, default=20)
    return parser.parse_args(argv)


class _CpuTimer:
    """``torch.cuda``-like shim for ``--device cpu`` (Triton interpreter): wall-clock events."""

    class Event:
        def __init__(self, enable_timing: bool = True) -> None:
            self.t = 0.0

        def record(self) -> None:
            self.t = time.perf_counter()

        def elapsed_time(self, end: _CpuTimer.Event) -> float:
            return (end.t - self.t) * 1e3

    @staticmethod
    def synchronize() -> None:
        return None

    @staticmethod
    def is_available() -> bool:
        return True

    @staticmethod
    def empty_cache() -> None:
        return None


def _to_device(values: list[Any], device: str) -> list[Any]:
    import torch

    return [v.to(device) if isinstance(v, torch.Tensor) else v for v in values]


def _time_ms(fn: Any, inputs: list[Any], device_mod: Any, warmup: int, trials: int) -> float:
    for _ in range(warmup):
        fn(*inputs)
    device_mod.synchronize()
    times = []
    for _ in range(trials):
        start, end = device_mod.Event(enable_timing=True), device_mod.Event(enable_timing=True)
        start.record()
        fn(*inputs)
        end.record()
        device_mod.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def _check_task(task: Any, args: argparse.Namespace, device_mod: Any) -> dict[str, Any]:
    import torch

    from ascend_kernel_gym.tasks.runtime import exec_source, instantiate

    tm = instantiate(task, args.profile)
    solution = exec_source(task.solution_source(), f"akg_solution_{task.name}", task.solution_path)
    torch.manual_seed(args.seed)
    init = tm.get_init_inputs()
    torch.manual_seed(args.seed)
    ref_model = tm.Model(*init)
    torch.manual_seed(args.seed)
    new_model = solution.ModelNew(*init)
    new_model.load_state_dict(ref_model.state_dict(), strict=True)
    ref_model, new_model = ref_model.to(args.device).eval(), new_model.to(args.device).eval()
    torch.manual_seed(args.seed + 1)
    inputs = _to_device(tm.get_inputs(), args.device)
    with torch.no_grad():
        ref = ref_model(*[v.clone() if isinstance(v, torch.Tensor) else v for v in inputs])
        out = new_model(*[v.clone() if isinstance(v, torch.Tensor) else v for v in inputs])
        device_mod.synchronize()
        if out.shape != ref.shape or out.dtype != ref.dtype:
            return {"ok": False, "note": f"got {tuple(out.shape)} {out.dtype}, want {tuple(ref.shape)} {ref.dtype}"}
        ok = bool(torch.allclose(out, ref, atol=task.atol, rtol=task.rtol))
        err = (out.double() - ref.double()).abs().max().item()
        ref_ms = _time_ms(ref_model, inputs, device_mod, args.warmup, args.trials)
        sol_ms = _time_ms(new_model, inputs, device_mod, args.warmup, args.trials)
    return {"ok": ok, "err": err, "ref_ms": ref_ms, "sol_ms": sol_ms, "note": ""}


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    if args.device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"
    import torch
    from rich.console import Console
    from rich.table import Table
    from tqdm import tqdm

    if args.device == "npu":
        import torch_npu  # noqa: F401  (registers torch.npu)
    device_mod = _CpuTimer if args.device == "cpu" else getattr(torch, args.device)
    if not device_mod.is_available():
        print(f"device {args.device!r} is not available here", file=sys.stderr)
        return 2

    from ascend_kernel_gym.tasks import load_suite

    tasks = load_suite(args.suite, levels=args.levels, task_ids=args.tasks)
    tasks = [t for t in tasks if t.solution_path is not None and args.profile in t.profiles]
    table = Table(title=f"{args.suite} reference solutions, profile {args.profile!r} on {args.device}")
    table.add_column("task", no_wrap=True)
    for column in ("dtype", "ok", "max abs err", "atol/rtol", "ref ms", "solution ms", "speedup (ref/solution)"):
        table.add_column(column)
    failures = 0
    for task in tqdm(tasks, desc="solutions"):
        try:
            row = _check_task(task, args, device_mod)
        except Exception as exc:  # report every task, keep going
            row = {"ok": False, "note": f"{type(exc).__name__}: {exc}"[:200]}
            traceback.print_exc()
        failures += not row["ok"]
        ratio = row["ref_ms"] / row["sol_ms"] if row.get("sol_ms") else None
        table.add_row(
            task.id,
            task.dtype,
            "yes" if row["ok"] else f"NO {row.get('note', '')}",
            f"{row['err']:.3g}" if "err" in row else "-",
            f"{task.atol:g}/{task.rtol:g}",
            f"{row['ref_ms']:.3f}" if "ref_ms" in row else "-",
            f"{row['sol_ms']:.3f}" if "sol_ms" in row else "-",
            f"{ratio:.2f}x" if ratio else "-",
        )
        device_mod.empty_cache()
    Console(width=max(Console().width, 140)).print(table)
    print(f"{len(tasks) - failures}/{len(tasks)} solutions match their reference")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
