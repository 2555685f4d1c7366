"""Cost-model validation from GPU times measured elsewhere.

`bench/gpu_cost_model.py` times every variant on the GPU and estimates it with the interpreter
on the same machine. Where that machine's estimates are missing (an older run whose cost-model
pass failed there), this script keeps the measured times from the run's JSON, computes the
missing estimates here (same variant generator, chip profile and sampling) and writes the same
report and JSON as the GPU script, with a note saying where the estimates came from.

    python bench/cost_model_offline.py bench/results/gpu_cost_model_h200_measured.json \
        --out bench/results/gpu_cost_model_h200_l1.md
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import platform
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import gpu_cost_model as bench  # noqa: E402


def _max_variants(command: str, default: int = 5) -> int:
    match = re.search(r"--max-variants\s+(\d+)", command)
    return int(match.group(1)) if match else default


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("measured", type=Path, help="JSON written by bench/gpu_cost_model.py on the GPU")
    parser.add_argument("--chip", default=None, help="chip profile (default: the GPU run's)")
    parser.add_argument("--max-programs", type=int, default=None, help="default: the GPU run's")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)

    measured = json.loads(args.measured.read_text())
    meta = dict(measured["meta"])
    chip = args.chip or meta.get("chip_profile") or "H200"
    max_programs = args.max_programs or int(meta.get("max_programs") or 8)
    rows = measured["rows"]
    todo = [r for r in rows if r.get("correct") and r.get("measured_ms") is not None and r.get("est_ms") is None]
    from ascend_kernel_gym.tasks import get_task

    variants: dict[str, dict[str, str]] = {}
    jobs = []
    for row in todo:
        if row["task"] not in variants:
            task = get_task(row["task"])
            variants[row["task"]] = dict(
                bench.make_variants(task.solution_source() or "", _max_variants(meta["command"]))
            )
        code = variants[row["task"]][row["variant"]]
        jobs.append(
            {"task_id": row["task"], "code": code, "profile": meta.get("profile") or "full", "seed": 0, "chip": chip,
             "max_programs": max_programs}
        )  # fmt: skip
    started = time.perf_counter()
    with multiprocessing.get_context("spawn").Pool(args.workers, initializer=bench._init_estimator) as pool:
        estimates = pool.map(bench.estimate_job, jobs, chunksize=1)
    for row, est in zip(todo, estimates, strict=True):
        row.update(
            est_ms=est.get("est_ms"),
            est_error=(est.get("error") or "")[:300],
            est_speedup=est.get("est_speedup"),
            est_roofline_fraction=est.get("est_roofline_fraction"),
            bound=est.get("bound"),
            programs=est.get("programs"),
            sampled=est.get("sampled"),
        )
    import triton

    meta["notes"] = [
        f"{len(todo)} estimates computed offline ({platform.machine()}, Python {platform.python_version()}, triton "
        f"{triton.__version__}, chip profile {chip}, {time.perf_counter() - started:.0f} s) by "
        "`bench/cost_model_offline.py`: the GPU run's own cost-model pass had failed (triton 3.6 with NumPy 2.4, "
        "since fixed); the times are the GPU run's."
    ]
    summary = bench._summarise(rows)
    text = bench.render_markdown(meta, summary, rows)
    args.out.write_text(text)
    args.out.with_suffix(".json").write_text(json.dumps({"meta": meta, "summary": summary, "rows": rows}, indent=2))
    print(text.split("\n| task | n |")[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
