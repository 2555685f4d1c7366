"""Wall time of ``akg kb search`` as a user runs it: a fresh process per call, cold index cache first.

    python bench/bench_kb_cli.py [--repeats 5] [--source DIR] [--label NAME] [--out bench/results/bench_kb_cli.md]

Each call is ``python -m ascend_kernel_gym.cli kb search QUERY -k 3`` in a new process with an
index cache of its own (``AKG_CACHE_DIR`` in a temporary directory): the first call builds the
index (the first-use case), the next ``--repeats`` calls find it cached (the warm case). The wall
time includes Python's start-up and every import, which is what a user waits for. ``--source``
runs another checkout of the package (e.g. an older commit unpacked with ``git archive``) so that
two versions can be measured on the same machine in the same minutes; ``--append`` adds the
rows to an existing results file.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QUERY = "ub overflow, requires 3145728 bits while 1572864 bits available"


def _call(source: Path, cache: str, query: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    env = dict(os.environ, AKG_CACHE_DIR=cache, PYTHONPATH=str(source), COLUMNS="120")
    argv = [sys.executable, "-m", "ascend_kernel_gym.cli", "kb", "search", query, "-k", "3"]
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=source, timeout=900)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"akg kb search failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return elapsed, done


def _load() -> str:
    try:
        return "load average " + " ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        return "load average n/a"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5, help="warm calls after the first (default 5)")
    parser.add_argument("--source", default=str(ROOT), help="directory holding the ascend_kernel_gym package")
    parser.add_argument("--label", default="this checkout", help="name of the version in the table")
    parser.add_argument("--query", default=QUERY, help="the search query")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "bench_kb_cli.md"), help="Markdown output")
    parser.add_argument("--append", action="store_true", help="add rows to --out instead of replacing it")
    args = parser.parse_args()

    source = Path(args.source).resolve()
    before = _load()
    with tempfile.TemporaryDirectory(prefix="akg-bench-kb-cli-") as cache:
        first, done = _call(source, cache, args.query)
        warm = [_call(source, cache, args.query)[0] for _ in range(args.repeats)]
    top = next((line for line in done.stdout.splitlines() if "│ 1 " in line or line.startswith("1 ")), "")
    rows = [
        (args.label, "first call (index built)", f"{first:.2f} s"),
        (args.label, f"warm, median of {len(warm)}", f"{statistics.median(warm):.2f} s"),
        (args.label, "warm, min / max", f"{min(warm):.2f} s / {max(warm):.2f} s"),
    ]
    for row in rows:
        print(" | ".join(row))
    print(f"top hit line: {top.strip()}")

    out = Path(args.out)
    header = [
        "# `akg kb search` wall time, a fresh process per call",
        "",
        f"Query: `{args.query}` (-k 3). Python {platform.python_version()} on {platform.machine()}, "
        f"{os.cpu_count()} CPU(s). Produced by `python bench/bench_kb_cli.py`.",
        "",
        "| version | call | wall time | machine load (before / after) |",
        "|---|---|---|---|",
    ]
    lines = [f"| {a} | {b} | {c} | {before} / {_load()} |" for a, b, c in rows]
    if args.append and out.is_file():
        out.write_text(out.read_text(encoding="utf-8").rstrip("\n") + "\n" + "\n".join(lines) + "\n", encoding="utf-8")
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("\n".join(header + lines) + "\n", encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
