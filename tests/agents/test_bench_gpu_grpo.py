"""The GPU benchmark's CPU path (``--tiny``) runs end to end, so the GPU run works the first time."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

pytest.importorskip("transformers")
pytest.importorskip("torch")

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "gpu_grpo.py"


def test_gpu_grpo_tiny(tmp_path):
    spec = importlib.util.spec_from_file_location("gpu_grpo", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = tmp_path / "gpu_grpo.md"
    # budget 1650: the interpreter prompt (~1500 tokens) plus one 32-token turn and its feedback fits,
    # two do not, so the episode compacts once
    assert module.main(["--tiny", "--out", str(out), "--max-new-tokens", "32", "--budget-tokens", "1650"]) == 0
    text = out.read_text()
    for row in ("generation tokens/s", "update tokens/s", "peak GPU memory", "segments / episode"):
        assert row in text
    data = json.loads(out.with_suffix(".json").read_text())
    assert data["rollout.generated_tokens"] > 0 and data["update.update_tokens_per_s"] > 0
    assert data["rollout.segments_per_episode"] >= 2
    assert data["reference.correct"] == [True]
