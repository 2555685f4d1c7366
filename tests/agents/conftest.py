"""Shared fixtures of the agents tests: a tiny local LM, a fast stand-in evaluator, a segmenting wrapper."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
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
        result = EvalResult(task_id=request.task.id, backend="interpreter", profile="small", code_hash=str(hash(code)),
                            format_ok=True, static_ok=True)
        solution = (request.task.solution_source() or "").strip()
        if "class ModelNew(Model)" in code:
            result.stage, result.compiled, result.correct, result.hack = Stage.CORRECTNESS, True, True, True
            result.error_type = ErrorType.TORCH_FALLBACK
        elif code.strip() == solution:
            result.stage, result.compiled, result.correct = Stage.DONE, True, True
        else:
            result.stage, result.error_type = Stage.COMPILE, ErrorType.RUNTIME_ERROR
        return result


class SegmentingWrapper(gym.Wrapper):
    """A stand-in for the compaction wrapper's contract (``info["segment"]``, policy-written summaries).

    After ``turns_per_segment`` kernel turns the next context ends with a request to summarise;
    the next action is the summary (not sent to the env), and the context becomes the first two
    messages plus the summary. ``max_compactions`` exceeded -> truncated with ``overlong``.
    """

    def __init__(self, env: gym.Env, turns_per_segment: int = 2, max_compactions: int = 8) -> None:
        super().__init__(env)
        self.turns_per_segment = turns_per_segment
        self.max_compactions = max_compactions

    def _segment(self, summary: bool) -> dict[str, Any]:
        return {"index": self.index, "turn_in_segment": self.turn_in_segment, "is_summary_turn": summary,
                "tokens_before": 0, "tokens_after": 0, "compactions": self.index, "overlong": self.overlong}

    def reset(self, **kwargs: Any):
        obs, info = self.env.reset(**kwargs)
        self.index, self.turn_in_segment, self.pending, self.overlong = 0, 0, False, False
        info["segment"] = self._segment(False)
        return obs, info

    def step(self, action: Any):
        base = self.env.unwrapped
        if self.pending:
            self.pending = False
            messages = [dict(m) for m in base.messages[:2]] + [{"role": "user", "content": f"Summary: {action}"}]
            base.set_messages(messages)
            self.index += 1
            self.turn_in_segment = 0
            info = {"messages": messages, "score": None, "eval": None}
            truncated = self.index > self.max_compactions
            self.overlong = truncated
            info["segment"] = self._segment(True)
            return base.render_observation(), 0.0, False, truncated, info
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.turn_in_segment += 1
        if not (terminated or truncated) and self.turn_in_segment >= self.turns_per_segment:
            self.pending = True
            messages = [dict(m) for m in base.messages]
            messages[-1] = {"role": "user", "content": messages[-1]["content"] + "\nSummarise the episode so far."}
            base.set_messages(messages)
            obs = base.render_observation()
            info["messages"] = messages
        info["segment"] = self._segment(False)
        return obs, reward, terminated, truncated, info


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
