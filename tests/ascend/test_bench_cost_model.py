"""bench/gpu_cost_model.py: rank correlation, block-size variants, and a dry run on the CPU."""

from __future__ import annotations

import importlib.util
import math
import sys

import pytest

# Evaluates many kernels end to end: left out of the fast lane (`make test-fast`).
pytestmark = pytest.mark.slow


def _bench_module():
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "bench" / "gpu_cost_model.py"
    spec = importlib.util.spec_from_file_location("akg_bench_gpu_cost_model", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_spearman_and_variants() -> None:
    bench = _bench_module()
    assert bench.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert bench.spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # ties get average ranks: x ranks (1, 2.5, 2.5, 4), y ranks (1, 3, 2, 4) -> 4.5 / sqrt(4.5 * 5)
    assert bench.spearman([1, 2, 2, 3], [1, 3, 2, 4]) == pytest.approx(4.5 / math.sqrt(22.5))
    assert bench.spearman([1, 1, 1], [1, 2, 3]) is None
    source = (
        "MAX_PROGRAMS = 4096\n"
        "@triton.jit\n"
        "def k(x, BLOCK: tl.constexpr = 256):\n"
        "    BLOCK_IN = 128\n"
        "class ModelNew:\n"
        "    def forward(self, x):\n"
        "        BLOCK_M, BLOCK_K = 64, 32\n"
        "        BLOCK_N = min(triton.next_power_of_2(n), 1024)\n"
    )
    variants = dict(bench.make_variants(source, 4))
    assert list(variants) == ["original", "blocks x0.5", "blocks x2", "programs /16"]
    assert "BLOCK_M, BLOCK_K = 32, 16" in variants["blocks x0.5"]
    assert "next_power_of_2(n), 512)" in variants["blocks x0.5"]
    assert "BLOCK_IN = 128" in variants["blocks x2"]  # kernel bodies are left alone
    assert "MAX_PROGRAMS = 256" in variants["programs /16"]


def test_bench_dry_run(tmp_path) -> None:
    import json
    import subprocess
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    out = tmp_path / "report.md"
    command = [
        sys.executable, str(repo / "bench" / "gpu_cost_model.py"), "--dry-run", "--tasks", "core/L1/relu",
        "--max-variants", "3", "--max-programs", "4", "--workers", "1", "--compile-workers", "1", "--out", str(out),
    ]  # fmt: skip
    proc = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=repo, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads(out.with_suffix(".json").read_text())
    rows = data["rows"]
    assert [r["variant"] for r in rows] == ["original", "blocks x0.5", "blocks x2"]
    assert all(r["correct"] and r["est_ms"] and r["measured_ms"] for r in rows), rows
    assert data["summary"]["per_task"]["core/L1/relu"]["n"] == 3
    text = out.read_text()
    assert "DRY RUN" in text and "core/L1/relu" in text and "Spearman" in text
