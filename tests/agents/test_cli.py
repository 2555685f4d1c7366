"""``akg train``: runs an iteration from a YAML config with the real evaluator, resumes, reports errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

pytest.importorskip("transformers")
pytest.importorskip("torch")

from ascend_kernel_gym.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "configs" / "segment_grpo_tiny.yaml"


def test_train_runs_resumes_and_logs(tmp_path, capsys):
    config = yaml.safe_load(EXAMPLE.read_text())
    # the example, shrunk: one task, two episodes of one turn (three distinct kernels at most)
    config.update(
        task_ids=["core/L1/relu"],
        tasks_per_iteration=1,
        group_size=2,
        max_turns=1,
        compaction=None,
        save_every=1,
        progress=False,
        output_dir=str(tmp_path / "run"),
    )
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(config))
    assert main(["train", "--config", str(path), "--iterations", "1"]) == 0
    out = capsys.readouterr().out
    assert "reward_mean" in out and "metrics:" in out
    # Hugging Face format: akg eval --agent hf --model-path checkpoint-1 loads it
    checkpoint = tmp_path / "run" / "checkpoint-1"
    assert (checkpoint / "config.json").is_file() and (checkpoint / "model.safetensors").is_file()
    assert (checkpoint / "tokenizer_config.json").is_file() and (checkpoint / "optimizer.pt").is_file()
    # a second call resumes from checkpoint-1 and runs iteration 2 only
    assert main(["train", "--config", str(path), "--iterations", "2"]) == 0
    records = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in records] == [1, 2]
    for record in records:
        assert record["correct_rate"] is not None and 0.0 <= record["correct_rate"] <= 1.0
        assert record["generation_tokens_per_s"] > 0 and record["update_tokens_per_s"] >= 0
        assert {"clip_fraction", "kl", "compactions_per_episode", "tokens_per_segment", "speedup_mean"} <= set(record)


def test_train_errors_are_clear(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("group_size: 1\n")
    assert main(["train", "--config", str(bad)]) == 2
    assert "group_size" in capsys.readouterr().err
    assert main(["train"]) == 2
    assert main(["train", "--help-config"]) == 0
    assert "advantage (default 'segment')" in capsys.readouterr().out
