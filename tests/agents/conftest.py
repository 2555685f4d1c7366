"""Shared fixtures of the agents tests: a tiny local LM and a fast stand-in evaluator (tests/support/fake_judge.py)."""

from __future__ import annotations

import pytest
from fake_judge import FakeEvaluator


@pytest.fixture(scope="session")
def char_tokenizer():
    pytest.importorskip("transformers")
    from ascend_kernel_gym.agents.local_lm import build_char_tokenizer

    return build_char_tokenizer()


@pytest.fixture
def tiny_policy(char_tokenizer):
    from ascend_kernel_gym.agents.hf import HFPolicy, SamplingParams
    from ascend_kernel_gym.agents.local_lm import build_random_causal_lm

    model = build_random_causal_lm(tokenizer=char_tokenizer, seed=0)
    return HFPolicy(model, char_tokenizer, sampling=SamplingParams(max_new_tokens=6, seed=0))


@pytest.fixture
def fake_evaluator():
    return FakeEvaluator()
