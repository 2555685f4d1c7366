"""Size distribution of derived ``small`` profiles over the KernelBench-like corpora (CPU only).

    python bench/task_profiles.py [--budget 1000000] [--out bench/results/task_profiles.md]

For every file of ``tests/data/kb_corpus`` (KernelBench-style, 75 files), ``tests/data/kernelbench``
(4 real KernelBench files), ``tests/data/third_party`` and ``tests/data/mkb_corpus``
(``get_input_groups()`` files) it reports, in one run on this machine:

* elements (inputs + parameters, exact, counted on torch's ``meta`` device) at ``full`` and at the
  derived ``small`` profile, and the loader's AST estimate of the latter;
* what the old derivation (power-of-two factors only, no budget) gave: how many files got no
  ``small`` profile at all, how many stayed above 1M / 10M elements;
* whether the reference runs on the small sizes (CPU, real tensors), the shape cases within the
  budget and whether the reference accepts each, the loader's time per file, and the note of every
  file that does not fit.
"""

from __future__ import annotations

import argparse
import ast
import math
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import _bootstrap  # noqa: E402, F401 - the package without gymnasium where it is missing

from ascend_kernel_gym.tasks.profiles import Deriver  # noqa: E402
from ascend_kernel_gym.tasks.task import load_task_file  # noqa: E402

CORPORA = ["tests/data/kb_corpus", "tests/data/kernelbench", "tests/data/third_party", "tests/data/mkb_corpus"]
BUCKETS = [(0, 10**4), (10**4, 10**5), (10**5, 10**6), (10**6, 10**7), (10**7, 10**8), (10**8, math.inf)]


def bucket_label(lo: float, hi: float) -> str:
    def short(v: float) -> str:
        return "inf" if v == math.inf else f"1e{round(math.log10(v))}" if v else "0"

    return f"[{short(lo)}, {short(hi)})"


def reference_runs(task, case=None) -> str:
    import torch

    from ascend_kernel_gym.evaluation.inputs import device_redirect  # .cuda() / device="cuda" -> CPU
    from ascend_kernel_gym.tasks.runtime import instantiate

    try:
        tm = instantiate(task, "small", case)
        torch.manual_seed(0)
        with device_redirect(torch.device("cpu")):
            model = tm.Model(*tm.get_init_inputs())
            with torch.no_grad():
                model(*tm.get_inputs())
        return "yes"
    except Exception as exc:
        return f"no ({type(exc).__name__})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=1_000_000)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "task_profiles.md"))
    parser.add_argument("--no-run", action="store_true", help="skip running the references")
    args = parser.parse_args()
    import torch

    from ascend_kernel_gym.tasks.measure import measure_elements

    rows = []
    for corpus in CORPORA:
        for path in sorted((ROOT / corpus).rglob("*.py")):
            if "kernels" in path.parts or path.name == "only_docstring.py":
                continue
            start = time.perf_counter()
            task = load_task_file(path, small_budget_elems=args.budget)
            load_ms = (time.perf_counter() - start) * 1000
            full = measure_elements(task, "full")
            small = measure_elements(task, "small")
            old_total = None
            if not task.uses_input_groups:
                tree = ast.parse(task.source)
                old = Deriver(tree).derive(budget=sys.maxsize)  # step 1 only: the derivation before
                old_total = None if old.after.unknown else old.after.total
                old_none = not old.overrides
            else:
                old_none = True  # such files did not load at all
            cases = task.shape_cases("small", budget_elems=args.budget)
            rejected = [] if args.no_run else [c.name for c in cases[1:] if reference_runs(task, c) != "yes"]
            rows.append(
                {
                    "corpus": corpus.split("/")[-1],
                    "name": path.relative_to(ROOT / corpus).as_posix(),
                    "full": full.total if not full.error else None,
                    "small": small.total if not small.error else None,
                    "error": small.error or full.error,
                    "old": old_total,
                    "old_none": old_none,
                    "overrides": task.profiles["small"],
                    "note": task.profile_note("small"),
                    "fits": (not small.error) and small.total <= args.budget,
                    "runs": "-" if args.no_run else reference_runs(task),
                    "cases": [c.name + (" (rejected)" if c.name in rejected else "") for c in cases[1:]],
                    "rejected": len(rejected),
                    "load_ms": load_ms,
                }
            )
            last = rows[-1]
            print(f"{last['name']:55} full {last['full']!s:>14} small {last['small']!s:>10} {last['runs']}")

    lines = [
        "# Derived `small` profiles: size distribution",
        "",
        f"`python bench/task_profiles.py --budget {args.budget}` on {platform.machine()} "
        f"({platform.processor() or 'cpu'}), Python {platform.python_version()}, torch {torch.__version__}; "
        "one run. Elements are inputs + parameters + buffers, counted exactly on torch's `meta` device "
        "(`ascend_kernel_gym/tasks/measure.py`); the loader itself reads only the AST.",
        "",
    ]
    kb = [r for r in rows if r["corpus"] != "mkb_corpus"]
    fits = [r for r in rows if r["fits"]]
    not_fit = [r for r in rows if not r["fits"]]
    runs = [r for r in rows if r["runs"] == "yes"]
    old_none = [r for r in kb if r["old_none"]]
    old_1m = [r for r in kb if r["old"] is not None and r["old"] > 10**6]
    old_10m = [r for r in kb if r["old"] is not None and r["old"] > 10**7]
    lines += [
        "## Summary",
        "",
        "| | files |",
        "|---|---|",
        f"| task files (KernelBench-style / get_input_groups) | {len(kb)} / {len(rows) - len(kb)} |",
        f"| small profile within the budget of {args.budget:,} elements (exact count) | {len(fits)} |",
        f"| cannot reach the budget (note says why) | {len(not_fit)} |",
        f"| reference runs on the small sizes (CPU) | {len(runs)} of {len(rows)} |",
        f"| extra shape cases at small within the budget / the reference rejects | "
        f"{sum(len(r['cases']) for r in rows)} / {sum(r['rejected'] for r in rows)} |",
        f"| before (power-of-two rule only): no small profile at all (ran at full) | {len(old_none)} of {len(kb)} |",
        f"| before: what ran on the interpreter (small, else full) above 1M elements | {len(old_1m)} |",
        f"| before: what ran on the interpreter above 10M elements | {len(old_10m)} |",
        f"| loader time per file, median (AST only) | {sorted(r['load_ms'] for r in rows)[len(rows) // 2]:.1f} ms |",
        "",
        "## Distribution (files per size bucket, exact elements)",
        "",
        "| elements | full | small (now) | small (before) |",
        "|---|---|---|---|",
    ]
    for lo, hi in BUCKETS:

        def count(key: str, lo: float = lo, hi: float = hi) -> int:
            return sum(1 for r in kb if r[key] is not None and lo <= r[key] < hi)

        lines.append(f"| {bucket_label(lo, hi)} | {count('full')} | {count('small')} | {count('old')} |")
    lines += [
        "",
        "(`small (before)` leaves out files whose size the AST cannot tell; files with no small profile before",
        "ran at `full`.)",
        "",
        "## Files that do not fit the budget",
        "",
        "| file | full | small | why (the task's `small` note, as `akg tasks show` prints it) |",
        "|---|---|---|---|",
    ]
    for r in not_fit:
        lines.append(f"| {r['corpus']}/{r['name']} | {r['full']} | {r['small']} | {r['note'] or r['error']} |")
    lines += [
        "",
        "## Every file",
        "",
        "| corpus | file | full | small | before | small profile | reference runs | extra shape cases |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        profile = ", ".join(f"{k}={v}" for k, v in r["overrides"].items()) or "(file's sizes)"
        before = "none" if r["old_none"] else (r["old"] if r["old"] is not None else "?")
        lines.append(
            f"| {r['corpus']} | {r['name']} | {r['full']} | {r['small']} | {before} | {profile} | {r['runs']} | "
            f"{', '.join(r['cases'])} |"
        )
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines[:30]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
