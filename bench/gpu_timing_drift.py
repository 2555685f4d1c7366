"""Why a reference solution's speedup moves between evaluations (issue 24's noise floor).

For each task of ``--tasks`` this runs, one worker, interleaved: the evaluator with the usual
correctness trials (``--trials``, default 5) and with one trial (no varied values, parameters or
shape cases before the timing stage), ``--repeats`` times each, and times the solution and the
reference in this process with a plain protocol (CUDA events around each call after an L2
flush, median of ``--reps``) as ground truth. Per evaluation it keeps the timing stage's mode,
cushion, kept outputs, arena slack, spills and the candidate's sample quartiles, so a drift
shows which side moved and under which conditions.

    python bench/gpu_timing_drift.py --out $OUT/gpu_timing_drift_h200.md
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
from _benchutil import load_module

from ascend_kernel_gym.evaluation import EvalRequest, Evaluator
from ascend_kernel_gym.tasks import load_suite

DEFAULT_TASKS = (
    "core/L2/decode_attention_gqa,core/L2/residual_rmsnorm,core/L2/rotary_embedding,core/L1/transpose,"
    "core/L2/add_layernorm,core/L1/relu"
)


def plain_timing(task: Any, reps: int) -> dict[str, float]:
    """Median ms of the solution's and the reference's call, in this process (no harness)."""
    import torch

    torch.manual_seed(0)
    ref_mod = load_module(str(task.path), "drift_ref")
    sol_mod = load_module(str(task.solution_path), "drift_sol")
    init = ref_mod.get_init_inputs()
    torch.manual_seed(1)
    ref = ref_mod.Model(*init).cuda()
    torch.manual_seed(1)
    sol = sol_mod.ModelNew(*init).cuda()
    sol.load_state_dict(ref.state_dict(), strict=False)
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in ref_mod.get_inputs()]
    flush = torch.empty(64 * 1024 * 1024, dtype=torch.int32, device="cuda")
    out = {}
    with torch.no_grad():
        for name, model in (("kernel_ms", sol), ("ref_ms", ref)):
            for _ in range(5):
                model(*inputs)
            times = []
            for i in range(reps):
                flush.fill_(i)
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                torch.cuda.synchronize()
                flush.fill_(i + 1)
                start.record()
                model(*inputs)
                end.record()
                torch.cuda.synchronize()
                times.append(start.elapsed_time(end))
            out[name] = statistics.median(times)
    out["speedup"] = out["ref_ms"] / out["kernel_ms"]
    del ref, sol, inputs, flush
    torch.cuda.empty_cache()
    return out


def summarise(result: Any) -> dict[str, Any]:
    timing = result.timing or {}
    samples = timing.get("kernel_ms_samples") or []
    ordered = sorted(samples)
    q = (lambda p: ordered[int(p * (len(ordered) - 1))]) if ordered else (lambda p: None)
    return {
        "ok": result.ok,
        "error": f"{result.error_type.value}: {result.error_message[:200]}" if not result.ok else "",
        "speedup": result.speedup,
        "ref_ms": result.ref_ms,
        "kernel_ms": result.kernel_ms,
        "mode": timing.get("mode"),
        "cushion_ms": timing.get("cushion_ms"),
        "outputs_kept": timing.get("outputs_kept"),
        "arena_slack_bytes": timing.get("arena_slack_bytes"),
        "max_spills": timing.get("max_spills"),
        "local_memory_moves": timing.get("local_memory_moves"),
        "kernel_q10_q50_q90": [q(0.1), q(0.5), q(0.9)],
        "first_kernel_samples": samples[:10],
        "phase_s": timing.get("phase_s"),
        "host": timing.get("host"),
        "stages": result.stage_durations,
    }


def _joined(runs: list[dict[str, Any]], key: str, pattern: str = "{:.4f}") -> str:
    return ", ".join("-" if x.get(key) is None else pattern.format(x[key]) for x in runs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default=DEFAULT_TASKS)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    wanted = [s.strip() for s in args.tasks.split(",") if s.strip()]
    tasks = {t.id: t for t in load_suite("core") if t.id in wanted}
    rows: dict[str, dict[str, Any]] = {}
    started = time.time()
    with Evaluator(backend="cuda", workers=1, cache=False, profile_reps=args.reps, ascend_checks="off") as ev:
        ev.warm_up()
        for task_id in wanted:
            task = tasks[task_id]
            code = task.solution_source() or ""
            row: dict[str, Any] = {"plain": [], f"trials_{args.trials}": [], "trials_1": []}
            for r in range(args.repeats):
                for trials in (args.trials, 1):
                    req = EvalRequest(task=task, code=f"{code}\n# drift {r} {trials}\n", num_trials=trials)
                    row[f"trials_{trials}"].append(summarise(ev.evaluate(req)))
                    print(task_id, trials, r, row[f"trials_{trials}"][-1]["speedup"], flush=True)
            rows[task_id] = row
    for task_id in wanted:  # in this process only after the pool is gone (no CUDA before its fork)
        for _ in range(2):
            rows[task_id]["plain"].append(plain_timing(tasks[task_id], args.reps))
        print(task_id, "plain", rows[task_id]["plain"], flush=True)
    meta = {"date": dt.datetime.now().isoformat(timespec="seconds"), "argv": sys.argv, "seconds": time.time() - started}
    args.out.with_suffix(".json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1, default=str))
    lines = [f"# Speedup drift between evaluations ({meta['date']})", "", f"- command: `{' '.join(sys.argv)}`", ""]
    header = "| task | config | speedups | kernel ms | ref ms | modes | cushion ms | outputs kept |"
    lines += [header, "|---|---|---|---|---|---|---|---|"]
    for task_id, row in rows.items():
        for config, runs in row.items():
            cells = [_joined(runs, "speedup", "{:.2f}"), _joined(runs, "kernel_ms"), _joined(runs, "ref_ms")]
            if config == "plain":
                cells += ["", "", ""]
            else:
                cells += [
                    _joined(runs, "mode", "{}"),
                    _joined(runs, "cushion_ms", "{:.3f}"),
                    _joined(runs, "outputs_kept", "{}"),
                ]
            lines.append(f"| {task_id} | {config} | " + " | ".join(cells) + " |")
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    raise SystemExit(main())
