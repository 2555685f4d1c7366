"""How much of a task's speedup spread is the summary statistic, and how much is the GPU?

Reads a ``bench/gpu_evaluator.py`` JSON whose rows carry every timed call
(``kernel_ms_samples`` / ``ref_ms_samples``, one list per evaluation) and recomputes each
evaluation's speedup with several summaries of the same samples: the evaluator's own (mean
without the fastest and slowest 10%), the median, the plain mean, the median of 5 consecutive
blocks' means, and the minimum. With ``--smi`` it also summarises an ``nvidia-smi`` CSV sampled
during the run (SM clock and the active clock-event reasons: ``0x4`` is the software power cap).

    python bench/timing_estimators.py bench/results/gpu_evaluator_h200_samples.json \
        --smi bench/results/gpu_evaluator_h200_samples_smi.csv --out bench/results/gpu_timing_estimators_h200.md
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ascend_kernel_gym.evaluation.timing import TRIM, trimmed_mean


def block_median(values: list[float], blocks: int = 5) -> float:
    """Median of the means of ``blocks`` consecutive blocks (a burst of slow calls spoils one block)."""
    size = max(1, len(values) // blocks)
    means = [statistics.fmean(values[i : i + size]) for i in range(0, size * blocks, size) if values[i : i + size]]
    return statistics.median(means)


ESTIMATORS: dict[str, Callable[[list[float]], float]] = {
    f"trimmed mean ({TRIM:.0%}, the evaluator's)": lambda v: trimmed_mean(v, TRIM),
    "median": statistics.median,
    "mean": statistics.fmean,
    "median of 5 block means": block_median,
    "minimum": min,
}


def spread_pct(values: list[float]) -> float:
    middle = statistics.median(values)
    return 100.0 * (max(values) - min(values)) / middle if middle else float("nan")


def task_spreads(row: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Spread over the evaluations of the speedup, kernel time and reference time, per estimator."""
    kernels = [s for s in row.get("kernel_ms_samples", []) if s]
    refs = [s for s in row.get("ref_ms_samples", []) if s]
    if len(kernels) < 2 or len(kernels) != len(refs):
        raise ValueError(f"{row.get('task')}: needs per-call samples of at least two evaluations")
    out = {}
    for name, summary in ESTIMATORS.items():
        kernel = [summary(s) for s in kernels]
        ref = [summary(s) for s in refs]
        out[name] = {
            "speedup": spread_pct([r / k for r, k in zip(ref, kernel, strict=True)]),
            "kernel": spread_pct(kernel),
            "ref": spread_pct(ref),
        }
    return out


def smi_summary(path: Path) -> dict[str, Any]:
    """SM clock range while busy and the share of busy samples under the software power cap."""
    with path.open(newline="") as handle:
        rows = [[cell.strip() for cell in row] for row in csv.reader(handle)]
    header, body = rows[0], [r for r in rows[1:] if len(r) == len(rows[0])]
    clock = next(i for i, name in enumerate(header) if name.startswith("clocks.current.sm"))
    reasons = next(i for i, name in enumerate(header) if "reasons" in name)
    power = next(i for i, name in enumerate(header) if name.startswith("power.draw"))
    busy = [r for r in body if int(r[reasons], 16) & 1 == 0]  # bit 0: GPU idle
    capped = [r for r in busy if int(r[reasons], 16) & 0x4]
    clocks = [float(r[clock].split()[0]) for r in capped]
    return {
        "samples": len(body),
        "busy": len(busy),
        "power_capped": len(capped),
        "capped_sm_mhz": (min(clocks), max(clocks)) if clocks else None,
        "max_power_w": max(float(r[power].split()[0]) for r in body),
        "uncapped_sm_mhz": sorted({float(r[clock].split()[0]) for r in busy if not int(r[reasons], 16) & 0x4}),
    }


def render(data: dict[str, Any], source: str, smi: dict[str, Any] | None) -> str:
    lines = [
        "# Speedup spread by summary statistic (same timed calls)",
        "",
        f"- source: `{source}` ({data.get('meta', {}).get('date', '?')}, {data.get('meta', {}).get('device', '?')})",
        "- spread = (max - min) / median over the evaluations of one task; each evaluation's samples",
        "  are the timed calls of the evaluator's profiling stage (100 per model)",
        "",
        "| task | evaluations | statistic | speedup spread | kernel spread | reference spread |",
        "|---|---|---|---|---|---|",
    ]
    for row in data["solutions"]:
        spreads = task_spreads(row)
        for name, s in spreads.items():
            lines.append(
                f"| {row['task']} | {len(row['kernel_ms_samples'])} | {name} | {s['speedup']:.2f}% | "
                f"{s['kernel']:.2f}% | {s['ref']:.2f}% |"
            )
    if smi is not None:
        capped = smi["capped_sm_mhz"]
        lines += [
            "",
            "## GPU clocks during the run (nvidia-smi)",
            "",
            f"- {smi['samples']} samples, {smi['busy']} with the GPU busy; {smi['power_capped']} of those under the "
            "software power cap (clock-event reason 0x4)"
            + (f", with the SM clock at {capped[0]:.0f}-{capped[1]:.0f} MHz" if capped else ""),
            f"- SM clocks while busy and not capped: {', '.join(f'{c:.0f}' for c in smi['uncapped_sm_mhz'])} MHz; "
            f"highest power draw {smi['max_power_w']:.0f} W",
        ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("samples", type=Path, help="a gpu_evaluator.py JSON with per-call samples")
    parser.add_argument("--smi", type=Path, default=None, help="nvidia-smi CSV sampled during that run")
    parser.add_argument("--out", type=Path, default=None, help="markdown output (default: print)")
    args = parser.parse_args(argv)
    data = json.loads(args.samples.read_text())
    text = render(data, args.samples.name, smi_summary(args.smi) if args.smi else None)
    if args.out:
        args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
