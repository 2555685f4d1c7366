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
    for row in ("## Generation", "## Update", "steady tokens/s", "x eager generate", "x TRL", "segments / episode"):
        assert row in text
    data = json.loads(out.with_suffix(".json").read_text())
    for batch in (2, 4):
        for engine in ("eager_generate", "loop", "static"):
            measured = data[f"generation.b{batch}.{engine}"]
            # every row generates its 16 tokens (a random model practically never samples its stop token)
            assert measured["steady_tokens"] == [16 * batch] * 2 and measured["tokens_per_s"] > 0
            assert measured["warmup_s"] > 0
    assert data["update.ours_fp32"]["tokens_per_s"] > 0
    if importlib.util.find_spec("trl") and importlib.util.find_spec("datasets"):
        assert data["update.trl_grpo"].get("tokens_per_s", 0) > 0, data["update.trl_grpo"]
    iteration = data["iteration"]
    assert iteration["rollout.generated_tokens"] > 0 and iteration["update.update_tokens_per_s"] > 0
    assert iteration["rollout.segments_per_episode"] >= 2
    assert iteration["reference.correct"] == [True]
