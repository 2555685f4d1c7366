"""Why does PyTorch's transpose copy run at different levels from one evaluation to the next?

The ``core/L1/transpose`` reference (``x.transpose(1, 2).contiguous()`` on a 16 x 4096 x 4096
bf16 tensor) is the one task of the H200 table whose speedup spread stays above 3%: within one
process every placement repeats within 0.3%, but the level moves between processes and between
allocation epochs (bench/results/gpu_timing_probe_h200.md). This probe asks which buffer the
level belongs to and whether it is a property of the buffer or of the moment:

1. *map*: ``--pairs`` (input, output) pairs of 512 MB buffers allocated at once; the copy is
   timed on every pair, then with the input fixed over every output and the output fixed over
   every input (which side carries the level), next to the Triton solution on the same inputs.
2. *revisit*: the first pairs again after ``--idle-s`` seconds of idle (a level that belongs to
   the buffer repeats; one that belongs to the moment does not).
3. *realloc*: everything freed and returned to the driver, new pairs allocated and timed.

Each fresh process runs all three; one more process runs with the expandable-segments allocator
(virtual memory mapped in 2 MB granules). Timing uses the evaluator's own primitive
(``timing.timed_call``: L2 flush, launch cushion, CUDA events), median of ``--reps``.

    python bench/gpu_transpose_memory_probe.py --out-dir $OUT
"""

from __future__ import annotations

import argparse
import datetime
import functools
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _bootstrap  # noqa: F401  (before the package: works without gymnasium)
import torch
from gpu_timing_probe import build

from ascend_kernel_gym.evaluation import timing

SHAPE = (16, 4096, 4096)


class Timer:
    def __init__(self, reps: int) -> None:
        self.reps = reps
        self.flush = torch.empty(timing.FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
        self.fills, _ = timing.cushion(torch.cuda, self.flush, timing.CUSHION_MS)

    def median_ms(self, call: Any) -> float:
        for _ in range(2):
            call()
        times = [
            timing.timed_call(call, torch.cuda, self.flush, self.fills, timing.STREAM_MODE, i) for i in range(self.reps)
        ]
        return round(statistics.median(times), 4)


def allocate_pairs(count: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    pairs = []
    for _ in range(count):
        x = torch.randn(SHAPE, dtype=torch.bfloat16, device="cuda")
        out = torch.empty((SHAPE[0], SHAPE[2], SHAPE[1]), dtype=torch.bfloat16, device="cuda")
        pairs.append((x, out))
    torch.cuda.synchronize()
    return pairs


def copy_call(x: torch.Tensor, out: torch.Tensor) -> Any:
    return lambda: out.copy_(x.transpose(1, 2))


def time_pairs(timer: Timer, pairs: list, sol: torch.nn.Module | None) -> list[dict]:
    rows = []
    for x, out in pairs:
        row = {"x_ptr": x.data_ptr(), "out_ptr": out.data_ptr(), "ref_ms": timer.median_ms(copy_call(x, out))}
        if sol is not None:
            row["sol_ms"] = timer.median_ms(lambda x=x: sol(x))
        rows.append(row)
    return rows


#: byte offsets of a view into one raw allocation (all multiples of 512 B: Triton's alignment
#: specialisation is unaffected); does the copy's level follow the address within a page?
OFFSETS = (0, 512, 4096, 8192, 65536, 1 << 20, 2 << 20, 3 << 20, 32 << 20, 256 << 20, 1 << 30)


def offset_levels(timer: Timer) -> dict[str, list[float]]:
    nbytes = SHAPE[0] * SHAPE[1] * SHAPE[2] * 2
    raw = torch.empty(max(OFFSETS) + nbytes, dtype=torch.uint8, device="cuda")
    raw.view(torch.int16).random_()  # any bit pattern: the copy does not look at the values
    x_fixed = torch.randn(SHAPE, dtype=torch.bfloat16, device="cuda")
    out_fixed = torch.empty((SHAPE[0], SHAPE[2], SHAPE[1]), dtype=torch.bfloat16, device="cuda")

    def view(off: int, shape: tuple[int, int, int]) -> torch.Tensor:
        return raw[off : off + nbytes].view(torch.bfloat16).view(shape)

    out_shape = (SHAPE[0], SHAPE[2], SHAPE[1])
    return {
        "x_at_offset": [timer.median_ms(copy_call(view(off, SHAPE), out_fixed)) for off in OFFSETS],
        "out_at_offset": [timer.median_ms(copy_call(x_fixed, view(off, out_shape))) for off in OFFSETS],
        "raw_ptr": [raw.data_ptr()],
    }


def flush_levels(x: torch.Tensor, out: torch.Tensor, buffers: int, reps: int) -> dict[str, list[float]]:
    """The copy on one (input, output) pair, timed behind each of ``buffers`` L2-flush buffers, with
    the flush done by writes (dirty lines, written back during the timed call, as the evaluator
    does) and by reads (clean lines)."""
    flushes = [torch.empty(timing.FLUSH_BYTES // 4, dtype=torch.int32, device="cuda") for _ in range(buffers)]
    fills, _ = timing.cushion(torch.cuda, flushes[0], timing.CUSHION_MS)
    call = copy_call(x, out)

    def timed(before: Any) -> float:
        times = []
        for i in range(reps + 2):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            for _ in range(fills):
                before(i)
            start.record()
            call()
            end.record()
            torch.cuda.synchronize()
            times.append(float(start.elapsed_time(end)))
        return round(statistics.median(times[2:]), 4)

    return {
        "write": [timed(lambda i, f=f: f.fill_(i)) for f in flushes],
        "read": [timed(lambda i, f=f: torch.sum(f, dtype=torch.int64)) for f in flushes],
    }


def child_main(args: argparse.Namespace) -> dict[str, Any]:
    models = build("L1/transpose")
    ref, _ = models["transpose:ref"]
    sol, _ = models["transpose:sol"]
    timer = Timer(args.reps)
    result: dict[str, Any] = {"alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")}
    if args.only_flush:
        (x, out), *_ = allocate_pairs(1)
        with torch.no_grad():
            result["flush"] = flush_levels(x, out, 6, args.reps)
        return result
    with torch.no_grad():
        pairs = allocate_pairs(args.pairs)
        result["map"] = time_pairs(timer, pairs, sol)
        x0, out0 = pairs[0]
        result["contiguous_ms"] = timer.median_ms(functools.partial(ref, x0))
        result["fixed_x"] = [timer.median_ms(copy_call(x0, out)) for _, out in pairs]
        result["fixed_out"] = [timer.median_ms(copy_call(x, out0)) for x, _ in pairs]
        time.sleep(args.idle_s)
        result["revisit"] = time_pairs(timer, pairs[: args.revisit], None)
        pairs.clear()
        x0 = out0 = None
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        pairs = allocate_pairs(args.revisit)
        result["realloc"] = time_pairs(timer, pairs, None)
        pairs.clear()
        torch.cuda.empty_cache()
        result["offsets"] = offset_levels(timer)
    return result


def summarise(proc: dict[str, Any]) -> dict[str, Any]:
    def stats(values: list[float]) -> str:
        return f"{min(values):.3f}-{max(values):.3f} (median {statistics.median(values):.3f})"

    return {
        "map ref": stats([r["ref_ms"] for r in proc["map"]]),
        "map sol": stats([r["sol_ms"] for r in proc["map"]]),
        "fixed x, each out": stats(proc["fixed_x"]),
        "fixed out, each x": stats(proc["fixed_out"]),
        "revisit ref": stats([r["ref_ms"] for r in proc["revisit"]]),
        "realloc ref": stats([r["ref_ms"] for r in proc["realloc"]]),
        "contiguous (pair 0)": f"{proc['contiguous_ms']:.3f}",
        "input at offsets": ", ".join(f"{v:.3f}" for v in proc["offsets"]["x_at_offset"]),
        "output at offsets": ", ".join(f"{v:.3f}" for v in proc["offsets"]["out_at_offset"]),
    }


def render(report: dict[str, Any]) -> str:
    lines = [
        f"# Transpose memory probe on {report['device']} (torch {report['torch']})",
        "",
        f"- date: {report['date']}; command: `{report['command']}`",
        "",
        "| process | allocator | what | ms (min-max, median) |",
        "|---|---|---|---|",
    ]
    for i, proc in enumerate(report["processes"]):
        if "error" in proc:
            lines.append(f"| {i} | | error | {proc['error'][-200:]!r} |")
            continue
        if "flush" in proc:
            for mode, values in proc["flush"].items():
                lines.append(
                    f"| {i} | default | flush by {mode}s, 6 buffers | {', '.join(f'{v:.3f}' for v in values)} |"
                )
        if "map" not in proc:
            continue
        for what, value in summarise(proc).items():
            lines.append(f"| {i} | {proc['alloc_conf'] or 'default'} | {what} | {value} |")
    lines.append("")
    if any("map" in proc for proc in report["processes"]):
        lines.append(f"- offsets (bytes into one raw allocation): {', '.join(map(str, OFFSETS))}")
    for i, proc in enumerate(report["processes"]):
        if "map" in proc:
            refs = ", ".join(f"{r['ref_ms']:.3f}" for r in proc["map"])
            lines.append(f"- process {i} map ref ms in allocation order: {refs}")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out-dir", default=os.environ.get("OUT", "."))
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--pairs", type=int, default=24)
    parser.add_argument("--revisit", type=int, default=6)
    parser.add_argument("--idle-s", type=float, default=10.0)
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument(
        "--only-flush", action="store_true", help="only time the copy behind 6 flush buffers, written and read"
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print("PROBE_JSON " + json.dumps(child_main(args)), flush=True)
        return
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {
        "device": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "command": "python " + " ".join(sys.argv),
        "processes": [],
    }
    confs = [""] * args.processes + ([] if args.only_flush else ["expandable_segments:True"])
    for i, conf in enumerate(confs):
        env = dict(os.environ)
        env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
        if conf:
            env["PYTORCH_CUDA_ALLOC_CONF"] = conf
        cmd = [sys.executable, __file__, "--child", "--pairs", str(args.pairs), "--revisit", str(args.revisit),
               "--idle-s", str(args.idle_s), "--reps", str(args.reps)]  # fmt: skip
        if args.only_flush:
            cmd.append("--only-flush")
        start = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
        line = [x for x in proc.stdout.splitlines() if x.startswith("PROBE_JSON ")]
        report["processes"].append(json.loads(line[0][11:]) if line else {"error": proc.stderr[-2000:]})
        print(f"process {i} ({conf or 'default'}): {time.perf_counter() - start:.1f} s", flush=True)
        (out_dir / "transpose_memory_probe.json").write_text(json.dumps(report, indent=1))
    (out_dir / "transpose_memory_probe.md").write_text(render(report))
    print(render(report))


if __name__ == "__main__":
    main()
