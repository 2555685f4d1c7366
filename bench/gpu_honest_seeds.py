"""Honest kernels under many seeds: how often the judge fails a bundled reference solution.

A reference solution is correct by construction, yet a correctness trial can fail it at random:
float16 references round differently than a kernel that accumulates in float32, and some
references are ill-conditioned on some trials (attention with large inputs picks another key
after one rounding step). Each such failure punishes an honest kernel. This script evaluates the
bundled solutions of ``--tasks`` under ``--seeds`` different evaluation seeds each (correctness
only, one worker) and reports, per task, the passes, the failures with their messages, and the
passes that needed stray elements (:class:`ascend_kernel_gym.evaluation.compare.Strays`): each
of those is an evaluation the judge failed before strays existed.

    python bench/gpu_honest_seeds.py --out $OUT/honest_seeds.md                  # cuda, attention tasks
    python bench/gpu_honest_seeds.py --backend interpreter --dry --seeds 2        # CPU smoke test
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _bootstrap  # noqa: F401  (before the package: works without gymnasium)
from _benchutil import package_versions

from ascend_kernel_gym.evaluation import EvalRequest, Evaluator
from ascend_kernel_gym.tasks import get_task

#: float16 / bfloat16 tasks whose references are ill-conditioned on large inputs
DEFAULT_TASKS = (
    "core/L3/mha_block",
    "core/L3/attention_head",
    "core/L2/attention",
    "core/L3/llama_decoder_block",
    "core/L3/gpt2_block",
    "core/L2/decode_attention_gqa",
)
DRY_TASKS = ("core/L1/relu",)
#: how the judge's warning names a pass that needed strays
STRAY_WARNING = "ill-conditioned"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default="cuda", choices=("cuda", "npu", "interpreter"))
    parser.add_argument("--tasks", default=",".join(DEFAULT_TASKS), help="comma-separated task ids")
    parser.add_argument("--seeds", type=int, default=10, help="evaluation seeds per task (default 10)")
    parser.add_argument("--first-seed", type=int, default=1, help="the first seed (default 1)")
    parser.add_argument("--budget-s", type=float, default=420.0, help="stop starting evaluations after this")
    parser.add_argument("--dry", action="store_true", help=f"tiny run: {DRY_TASKS}, small shapes")
    parser.add_argument("--out", type=Path, default=None, help="markdown output (default: $OUT or bench/results)")
    args = parser.parse_args(argv)
    if args.seeds < 1:
        parser.error("--seeds must be at least 1")
    if args.budget_s <= 0:
        parser.error("--budget-s must be positive")
    return args


def evaluate(args: argparse.Namespace) -> list[dict[str, Any]]:
    task_ids = list(DRY_TASKS) if args.dry else [t.strip() for t in args.tasks.split(",") if t.strip()]
    tasks = [get_task(task_id) for task_id in task_ids]
    for task in tasks:
        if not task.solution_source():
            raise SystemExit(f"{task.id} has no bundled solution")
    profile = "small" if args.dry else None
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    with Evaluator(backend=args.backend, cache=False) as ev:
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            if time.perf_counter() - started > args.budget_s:
                print(f"budget reached before seed {seed}", flush=True)
                break
            common: dict[str, Any] = {"profile": profile, "seed": seed, "measure_performance": False}
            requests = [EvalRequest(task=t, code=t.solution_source() or "", **common) for t in tasks]
            for task, result in zip(tasks, ev.evaluate_many(requests), strict=True):
                strays = [w for w in result.warnings if STRAY_WARNING in w]
                row = {
                    "task": task.id,
                    "seed": seed,
                    "ok": bool(result.correct),
                    "error_type": result.error_type.value,
                    "error": result.error_message[:400],
                    "strays": strays[0].split(" ", 1)[0] if strays else "",
                    "total_s": round(float(result.stage_durations.get("total", 0.0)), 3),
                }
                rows.append(row)
                print(json.dumps(row), flush=True)
    return rows


def summary(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for row in rows:
        entry = out.setdefault(row["task"], {"runs": 0, "passed": 0, "with_strays": 0, "failures": []})
        entry["runs"] += 1
        entry["passed"] += row["ok"]
        entry["with_strays"] += bool(row["ok"] and row["strays"])
        if not row["ok"]:
            entry["failures"].append(f"seed {row['seed']}: {row['error_type']}: {row['error'][:240]}")
    return out


def report(args: argparse.Namespace, rows: list[dict[str, Any]]) -> str:
    import torch

    device = torch.cuda.get_device_name(0) if args.backend == "cuda" and torch.cuda.is_available() else args.backend
    versions = ", ".join(f"{k} {v}" for k, v in package_versions().items())
    lines = [
        f"# Honest kernels under many seeds ({dt.date.today().isoformat()})",
        "",
        f"- device: {device}; versions: {versions}",
        f"- command: `python {' '.join(sys.argv)}`",
        "- each bundled solution evaluated once per seed, correctness only, one worker, cache off",
        "",
        "| task | runs | passed | passed with strays (failed before) | failed |",
        "|---|---|---|---|---|",
    ]
    table = summary(rows)
    for task_id, entry in table.items():
        failed = entry["runs"] - entry["passed"]
        lines.append(f"| {task_id} | {entry['runs']} | {entry['passed']} | {entry['with_strays']} | {failed} |")
    lines.append("")
    for task_id, entry in table.items():
        lines += [f"- {task_id}: {failure}" for failure in entry["failures"]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.backend == "interpreter":
        os.environ.setdefault("TRITON_INTERPRET", "1")
    rows = evaluate(args)
    text = report(args, rows)
    out = args.out or Path(os.environ.get("OUT") or Path(__file__).resolve().parent / "results") / "honest_seeds.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    out.with_suffix(".json").write_text(json.dumps({"rows": rows, "summary": summary(rows)}, indent=1))
    print(text)
    print(f"wrote {out} and {out.with_suffix('.json')}")
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
