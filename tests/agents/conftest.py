"""Shared fixtures of the agents tests: a tiny local LM and a fast stand-in evaluator."""

from __future__ import annotations

from typing import Any

import pytest

from ascend_kernel_gym.evaluation.result import ErrorType, EvalResult, Stage


class FakeEvaluator:
    """Scores by looking at the code, without running it: the reference solution is correct,
    ``class ModelNew(Model)`` is a hack, anything else fails at run time. Counts its calls."""

    backend = "interpreter"
    evaluator_id = "fake-evaluator"

    def __init__(self) -> None:
        self.calls = 0

    def evaluate(self, request: Any) -> EvalResult:
        self.calls += 1
        code = request.code
        result = EvalResult(
            task_id=request.task.id,
            backend="interpreter",
            profile="small",
            code_hash=str(hash(code)),
            format_ok=True,
            static_ok=True,
        )
        solution = (request.task.solution_source() or "").strip()
        if "class ModelNew(Model)" in code:
            result.stage, result.compiled, result.correct, result.hack = Stage.CORRECTNESS, True, True, True
            result.error_type = ErrorType.TORCH_FALLBACK
        elif code.strip() == solution:
            result.stage, result.compiled, result.correct = Stage.DONE, True, True
        else:
            result.stage, result.error_type = Stage.COMPILE, ErrorType.RUNTIME_ERROR
        return result


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
