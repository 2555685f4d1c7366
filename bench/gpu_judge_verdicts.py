"""Verdicts of the judge in the reference child (CUDA IPC) against the judge in the candidate's child.

Evaluates the core relu solution and broken variants of it (a wrong value, a constant output,
which takes the probe path, a wrong shape, a wrong dtype, an output on the host, an output that
aliases the input) once with each ``AKG_JUDGE`` mode given, one fresh pool per mode, and prints
the verdicts side by side; they must agree.

    python bench/gpu_judge_verdicts.py --modes reference,child --out $OUT/gpu_judge_verdicts_h200.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _bootstrap  # noqa: F401  (before the package: works without gymnasium)

VARIANTS = {
    "correct": lambda c: c,
    "wrong_value": lambda c: c.replace("tl.maximum(x, 0.0)", "tl.maximum(x, 0.5)"),
    "constant": lambda c: c.replace("tl.maximum(x, 0.0)", "x * 0.0"),
    "wrong_shape": lambda c: c.replace("return out", "return out[:-1]"),
    "wrong_dtype": lambda c: c.replace("return out", "return out.double()"),
    "on_host": lambda c: c.replace("return out", "return out.cpu()"),
    "aliases_input": lambda c: c.replace("return out", "return x"),
}


def worker(backend: str) -> dict[str, str]:
    from ascend_kernel_gym.evaluation import EvalRequest, Evaluator
    from ascend_kernel_gym.tasks import get_task

    task = get_task("core/L1/relu")
    code = task.solution_source() or ""
    out = {}
    with Evaluator(backend=backend, workers=1, cache=False, profile_reps=20) as ev:
        for name, edit in VARIANTS.items():
            variant = edit(code)
            if name != "correct" and variant == code:
                out[name] = "(edit does not apply)"
                continue
            r = ev.evaluate(EvalRequest(task=task, code=variant + f"\n# {name}\n", seed=3))
            out[name] = f"{r.error_type.value} passed={r.trials_passed} hack={r.hack}"
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="cuda")
    parser.add_argument("--modes", default="reference,child")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.backend)))
        return 0
    results = {}
    for mode in args.modes.split(","):
        env = {**os.environ, "AKG_JUDGE": mode}
        done = subprocess.run(
            [sys.executable, __file__, "--worker", "--backend", args.backend], env=env, capture_output=True, text=True
        )
        if done.returncode:
            results[mode] = {"error": done.stderr[-2000:]}
        else:
            results[mode] = json.loads(done.stdout.strip().splitlines()[-1])
    modes = list(results)
    agree = all(results[modes[0]].get(v) == results[m].get(v) for m in modes for v in VARIANTS)
    report = {"backend": args.backend, "results": results, "agree": agree}
    print(json.dumps(report, indent=1))
    if args.out:
        args.out.write_text(json.dumps(report, indent=1))
    return 0 if agree else 1


if __name__ == "__main__":
    raise SystemExit(main())
