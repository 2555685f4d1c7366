"""The GPU benchmark script runs end to end on the CPU (interpreter, dry run, without gymnasium),
so that the GPU run works the first time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

RUNNER = """
import runpy, sys
sys.modules["gymnasium"] = None  # the GPU machine has no gymnasium
sys.argv = ["bench/gpu_evaluator.py", "--backend", "interpreter", "--dry-run", "--tasks", "core/L1/relu",
            "--repeats", "1", "--relu-runs", "1", "--out", sys.argv[1]]
runpy.run_path("bench/gpu_evaluator.py", run_name="__main__")
"""


@pytest.mark.slow
def test_gpu_evaluator_dry_run(tmp_path) -> None:
    out = tmp_path / "gpu.md"
    proc = subprocess.run(
        [sys.executable, "-c", RUNNER, str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = out.read_text()
    assert "| core/L1/relu | 1/1 |" in text
    assert "fresh Python process per evaluation" in text and "warm pool (fork per evaluation)" in text
    data = json.loads(out.with_suffix(".json").read_text())
    assert data["relu"]["warm_ok"] == [True] and data["relu"]["fresh_ok"] == [True]
    assert data["meta"]["zygotes"][0]["device_touched"] is False
