"""SegmentGRPOConfig (agents/config.py): YAML loading, unknown keys, and a check for every field's values."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from ascend_kernel_gym.agents.config import SegmentGRPOConfig


def test_config_yaml_roundtrip_and_errors(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("group_size: 4\nadvantage: turn\ncompaction: {budget_tokens: 256, strategy: policy}\n")
    config = SegmentGRPOConfig.from_yaml(path)
    assert config.group_size == 4 and config.advantage == "turn" and config.compaction["budget_tokens"] == 256
    config.to_yaml(tmp_path / "out.yaml")
    assert SegmentGRPOConfig.from_yaml(tmp_path / "out.yaml") == config
    path.write_text("group_sise: 4\n")
    with pytest.raises(ValueError, match="unknown config keys \\['group_sise'\\]"):
        SegmentGRPOConfig.from_yaml(path)
    with pytest.raises(ValueError, match="group_size"):
        SegmentGRPOConfig(group_size=1)
    with pytest.raises(ValueError, match="advantage"):
        SegmentGRPOConfig(advantage="gae")
    with pytest.raises(ValueError, match="clip_low"):
        SegmentGRPOConfig(clip_low=1.5)
    assert all(f.metadata.get("help") for f in dataclasses.fields(SegmentGRPOConfig))


def test_example_config_loads():
    example = Path(__file__).resolve().parents[2] / "examples" / "configs" / "segment_grpo_tiny.yaml"
    config = SegmentGRPOConfig.from_yaml(example)
    assert config.compaction is not None and config.model_name_or_path is None


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("model_config", "gpt-5"),
        ("model_config", 12),
        ("tokenizer", "bpe:100"),  # a BPE vocabulary under 300 cannot hold the byte alphabet and specials
        ("tokenizer", "bpe:many"),
        ("tokenizer", "/no/such/tokenizer"),
        ("dtype", "float8"),
        ("split", "validation"),
        ("backend", "tpu"),
        ("reward_mode", "sum"),
        ("advantage", "gae"),
        ("tasks_per_iteration", 0),
        ("max_new_tokens", True),  # a bool is not a count
        ("iterations", 2.0),
        ("mini_batches", -1),
        ("save_every", -1),
        ("top_k", -3),
        ("seed", 1.5),
        ("group_size", 1),
        ("group_size", True),
        ("gamma", 1.01),
        ("gamma", -0.1),
        ("clip_low", 1.0),
        ("clip_high", -0.1),
        ("kl_coef", -1e-3),
        ("mismatch_eps", 0.0),
        ("mismatch_eps", 1.0),
        ("temperature", -0.5),
        ("top_p", 0.0),
        ("top_p", 1.5),
        ("learning_rate", 0.0),
        ("weight_decay", -0.1),
        ("max_grad_norm", 0.0),
        ("max_context_tokens", 0),
        ("env_kwargs", None),
        ("compaction", "policy"),
        ("kb", ["tips"]),
        ("choice", True),
        ("lora", {"r": 4, "rank": 8}),
    ],
)
def test_each_invalid_value_is_refused_naming_its_field(field, value):
    with pytest.raises(ValueError, match=rf"SegmentGRPOConfig\.{field}: .*\(got {re.escape(repr(value))}\)"):
        SegmentGRPOConfig(**{field: value})


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("tokenizer", "bpe:300"),
        ("tokenizer", "char"),
        ("model_config", {"architecture": "llama", "hidden_size": 32}),
        ("gamma", 0.0),
        ("clip_low", 0.0),
        ("mismatch_eps", 0.001),
        ("max_grad_norm", None),
        ("compaction", None),
        ("choice", {}),
        ("lora", {"r": 4, "alpha": 8, "dropout": 0.0, "target_modules": ["q_proj"]}),
        ("save_every", 0),
        ("temperature", 0.0),
    ],
)
def test_boundary_values_are_accepted(field, value):
    assert getattr(SegmentGRPOConfig(**{field: value}), field) == value


def test_a_model_directory_skips_the_preset_check_and_validate_catches_later_edits(tmp_path):
    config = SegmentGRPOConfig(model_name_or_path=str(tmp_path), model_config="not-a-preset", tokenizer=str(tmp_path))
    assert config.model_config == "not-a-preset"
    config.group_size = 1  # e.g. a CLI override after loading
    with pytest.raises(ValueError, match="group_size"):
        config.validate()


def test_from_dict_and_from_yaml_errors_name_the_problem(tmp_path):
    with pytest.raises(ValueError, match="a config must be a mapping, got list"):
        SegmentGRPOConfig.from_dict([1, 2])
    with pytest.raises(FileNotFoundError, match="does not exist"):
        SegmentGRPOConfig.from_yaml(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("gamma: 2.0\n")
    with pytest.raises(ValueError, match=rf"{bad}: SegmentGRPOConfig\.gamma"):
        SegmentGRPOConfig.from_yaml(bad)
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    assert SegmentGRPOConfig.from_yaml(empty) == SegmentGRPOConfig()
    assert set(SegmentGRPOConfig.field_help()) == {f.name for f in dataclasses.fields(SegmentGRPOConfig)}
