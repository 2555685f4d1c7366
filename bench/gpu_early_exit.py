"""Back-to-back evaluations that end early, against correct ones (warm pool, one worker).

An RL batch holds many candidates that fail at compile time or on their first call. In a
stream of such evaluations each job's child is the worker's spare, set up while the previous
evaluation ran, so a short evaluation can end up waiting for the next spare
(``stage_durations["compile.waited"]``). This script evaluates ``--n`` candidates of each kind
in a row on the relu task and reports the median wall time per evaluation and how much of it
was that wait:

    python bench/gpu_early_exit.py --out $OUT/early_exit.md          # cuda
    python bench/gpu_early_exit.py --backend interpreter --n 2        # CPU smoke test

Kinds: ``correct`` (the reference solution, timed), ``compile_error`` (``tl.maximum`` called with one
argument: the static stage cannot see it, the first call fails), ``call_error`` (the kernel launched
with an argument missing), ``wrong_output`` (a kernel that computes ``max(x, 1)``: fails the first
trial's comparison).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _bootstrap  # noqa: F401  (before the package: works without gymnasium)

from ascend_kernel_gym.evaluation import EvalRequest, Evaluator
from ascend_kernel_gym.tasks import get_task

TASK_ID = "core/L1/relu"
LAUNCH = "relu_kernel[grid](x, out, n, BLOCK_SIZE=BLOCK_SIZE)"
BODY = "tl.maximum(x, 0.0)"

#: kind -> (text replaced in the solution, replacement, expected error_type)
KINDS: dict[str, tuple[str, str, str]] = {
    "correct": (BODY, BODY, "none"),
    "compile_error": (BODY, "tl.maximum(x)", "compile_error"),
    "call_error": (LAUNCH, "relu_kernel[grid](x, out, BLOCK_SIZE=BLOCK_SIZE)", "runtime_error"),
    "wrong_output": (BODY, "tl.maximum(x, 1.0)", "value_mismatch"),
}
#: verdicts that differ on the interpreter (none today: the bad call fails the first call on every backend)
INTERPRETER_VERDICTS: dict[str, str] = {}


def candidate(solution: str, kind: str, i: int) -> str:
    old, new, _ = KINDS[kind]
    if old not in solution:
        raise SystemExit(f"the relu solution no longer contains {old!r}: update KINDS")
    return solution.replace(old, new) + f"\n# {kind} {i}\n"  # a new text each time: no cache hit


def run_kind(ev: Evaluator, solution: str, kind: str, n: int, profile: str | None) -> dict[str, Any]:
    task = get_task(TASK_ID)
    expected = KINDS[kind][2]
    if ev.backend == "interpreter":
        expected = INTERPRETER_VERDICTS.get(kind, expected)
    walls, waits, errors, parts = [], [], [], []
    for i in range(-1, n):  # -1: one untimed evaluation first, so the spare is of this kind's stream
        start = time.perf_counter()
        result = ev.evaluate(EvalRequest(task=task, code=candidate(solution, kind, i), profile=profile))
        wall = time.perf_counter() - start
        if result.error_type.value != expected:
            errors.append(f"{result.error_type.value}: {result.error_message[:200]}")
        if i >= 0:
            walls.append(wall)
            waits.append(result.stage_durations.get("compile.waited", 0.0))
            quiet = (result.timing or {}).get("quiet_wait_s")
            parts.append({**result.stage_durations, **({"timing.quiet_wait": quiet} if quiet is not None else {})})
    return {
        "kind": kind,
        "expected": expected,
        "walls": walls,
        "waits": waits,
        "unexpected": errors,
        "median_wall_s": statistics.median(walls),
        "median_wait_s": statistics.median(waits),
        "median_parts_s": {
            key: round(statistics.median(p.get(key, 0.0) for p in parts), 4)
            for key in dict.fromkeys(k for p in parts for k in p)
        },
    }


def render(meta: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    lines = [
        "# Back-to-back evaluations that end early (warm pool, one worker)",
        "",
        *(f"- {key}: {value}" for key, value in meta.items()),
        "",
        "| kind | verdict | evaluations | median wall s | min | max | median wait for the spare s | unexpected |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['kind']} | {row['expected']} | {len(row['walls'])} | {row['median_wall_s']:.3f} | "
            f"{min(row['walls']):.3f} | {max(row['walls']):.3f} | {row['median_wait_s']:.3f} | "
            f"{len(row['unexpected'])} |"
        )
    lines += ["", "Median seconds per part (`stage_durations`; `ahead.*` done before the job arrived):", ""]
    for row in rows:
        shown = ", ".join(
            f"{key} {value:.3f}" for key, value in row.get("median_parts_s", {}).items() if value >= 0.0005
        )
        lines.append(f"- {row['kind']}: {shown}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="cuda", choices=("cuda", "npu", "interpreter"))
    parser.add_argument("--n", type=int, default=8, help="evaluations per kind (default 8)")
    parser.add_argument("--profile", default=None, help="shape profile (default: the backend's)")
    parser.add_argument("--kinds", default=",".join(KINDS), help="comma-separated subset of " + ", ".join(KINDS))
    parser.add_argument("--out", type=Path, default=None, help="markdown report (JSON next to it)")
    args = parser.parse_args(argv)
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown or args.n < 1:
        parser.error(f"unknown kinds {unknown}" if unknown else "--n must be at least 1")

    from tqdm import tqdm

    solution = get_task(TASK_ID).solution_source() or ""
    started = time.time()
    with Evaluator(backend=args.backend, workers=1, cache=False, ascend_checks="off") as ev:
        ev.warm_up()
        rows = [run_kind(ev, solution, kind, args.n, args.profile) for kind in tqdm(kinds, desc="kinds")]
    meta = {
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "backend": args.backend,
        "task": TASK_ID,
        "command": "python " + " ".join([os.path.relpath(__file__), *(argv or sys.argv[1:])]),
        "elapsed_s": round(time.time() - started, 1),
    }
    text = render(meta, rows)
    print(text)
    for row in rows:
        for message in row["unexpected"][:3]:
            print(f"unexpected verdict for {row['kind']}: {message}")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
        args.out.with_suffix(".json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    return 1 if any(row["unexpected"] for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
