"""Replay the cheat and broken-kernel corpora on a real backend and compare each verdict with its label.

CI runs the corpora (``tests/evaluation/corpus``, ``tests/evaluation/redteam`` and the third-party
kernels in ``tests/data/third_party/kernels``) on the CPU interpreter. Some paths exist only on a
device: Triton's compiled launcher, autotune benchmarking with the device timer, CUDA streams, the
profiling stage's audits. This script evaluates every labelled file there (small shapes, the
profiling stage on) and lists the files whose verdict is not among the ones their header allows,
split into cheats or broken kernels that came back correct (the dangerous kind) and others.

    python bench/gpu_redteam.py --out $OUT/gpu_redteam.md             # cuda
    python bench/gpu_redteam.py --backend interpreter --only legit_ --out /tmp/redteam.md
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import os
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import _bootstrap  # noqa: E402, F401  (before the package: works without gymnasium)

from ascend_kernel_gym.evaluation import ErrorType, EvalRequest, Evaluator  # noqa: E402
from ascend_kernel_gym.tasks import get_task  # noqa: E402

TESTS = ROOT / "tests"
#: (folder of labelled files, folder their ``# task:`` paths are relative to, seed the tests use)
SOURCES = (
    (TESTS / "evaluation" / "corpus", TESTS / "data", 1234),
    (TESTS / "evaluation" / "redteam", TESTS / "data", 20260),
    (TESTS / "data" / "third_party" / "kernels", TESTS / "data" / "third_party", 31337),
)
LABEL = re.compile(r"#\s*(expected|expected_on_cuda|expected_on_npu|task|timeout):\s*(.+)")


@dataclass
class Case:
    path: Path
    expected: set[ErrorType]
    task: Any
    timeout_s: float | None
    seed: int


def labels(path: Path) -> dict[str, str]:
    """The ``# key: value`` lines at the top of a labelled file (up to its first code line)."""
    head = itertools.takewhile(lambda line: not line.strip() or line.startswith("#"), path.read_text().splitlines())
    return {m.group(1): m.group(2).strip() for m in map(LABEL.match, head) if m}


def load_cases(only: str | None, backend: str = "interpreter") -> list[Case]:
    """Every labelled file; ``# expected_on_<backend>:`` replaces ``# expected:`` on that backend
    (a Triton version that compiles less, a device that faults where the CPU segfaults)."""
    cases = []
    for folder, task_root, seed in SOURCES:
        for path in sorted(folder.glob("*.py")):
            if only and only not in path.name:
                continue
            meta = labels(path)
            if "expected" not in meta:
                raise SystemExit(f"{path.relative_to(ROOT)} has no '# expected:' label")
            name = meta.get("task", "core/L1/relu")
            task = get_task(str(task_root / name) if name.endswith(".py") else name)
            timeout = float(meta["timeout"]) if "timeout" in meta else None
            label = meta.get(f"expected_on_{backend}", meta["expected"])
            expected = {ErrorType(kind) for kind in label.split("|")}
            cases.append(Case(path, expected, task, timeout, seed))
    return cases


def verdicts(cases: list[Case], results: list[Any]) -> list[dict[str, Any]]:
    rows = []
    for case, result in zip(cases, results, strict=True):
        allowed = result.error_type in case.expected
        wrongly_correct = result.correct and ErrorType.NONE not in case.expected
        rows.append(
            {
                "file": str(case.path.relative_to(ROOT)),
                "expected": sorted(e.value for e in case.expected),
                "got": result.error_type.value,
                "correct": result.correct,
                "ok": allowed and not wrongly_correct,
                "cheat_passed": wrongly_correct,
                "message": result.error_message[:300],
                "speedup": result.speedup,
            }
        )
    return rows


def render(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    bad = [r for r in rows if not r["ok"]]
    cheats = [r for r in bad if r["cheat_passed"]]
    lines = [
        f"# Labelled cheat / broken / legitimate kernels on {meta['backend']}",
        "",
        f"- date: {meta['date']}; device: {meta['device']}; torch {meta['torch']}, triton {meta['triton']}",
        f"- command: `{meta['command']}`",
        f"- {len(rows)} files; {len(rows) - len(bad)} got an allowed verdict; {len(cheats)} cheats or broken kernels "
        f"came back correct; {len(bad) - len(cheats)} other mismatches; {meta['seconds']:.0f} s",
        "",
    ]
    if bad:
        lines += ["| file | allowed | got | message |", "|---|---|---|---|"]
        for r in bad:
            message = r["message"].replace("|", "\\|").replace("\n", " ")
            lines.append(f"| {r['file']} | {', '.join(r['expected'])} | {r['got']} | {message} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", default="cuda", choices=("cuda", "npu", "interpreter"))
    parser.add_argument("--workers", type=int, default=4, help="parallel children (verdicts only, not timings)")
    parser.add_argument("--only", default=None, help="only files whose name contains this")
    parser.add_argument("--out", type=Path, default=None, help="markdown output; the JSON goes next to it")
    args = parser.parse_args(argv)
    cases = load_cases(args.only, args.backend)
    started = time.perf_counter()
    with Evaluator(backend=args.backend, workers=args.workers, cache=False, timeout_s=120) as ev:
        requests = [
            EvalRequest(
                task=c.task,
                code=c.path.read_text(),
                timeout_s=c.timeout_s,
                seed=c.seed,
                profile="small" if "small" in c.task.profiles else None,  # files with fixed sizes have only "full"
            )
            for c in cases
        ]
        results = ev.evaluate_many(requests)
    rows = verdicts(cases, results)
    import torch
    import triton

    meta = {
        "backend": args.backend,
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "device": torch.cuda.get_device_name(0) if args.backend == "cuda" else args.backend,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "command": "python " + " ".join([Path(sys.argv[0]).as_posix(), *(argv if argv is not None else sys.argv[1:])]),
        "seconds": time.perf_counter() - started,
    }
    text = render(rows, meta)
    out = args.out or (Path(os.environ["OUT"]) / "gpu_redteam.md" if "OUT" in os.environ else None)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
        out.with_suffix(".json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    print(text)
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
