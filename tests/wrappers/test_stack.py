"""The one stack builder and its order, and the ATRL preset built with it (trigger-only retrieval to stay fast)."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest
from compaction_kb_helpers import ScriptedEvaluator
from env_helpers import RELU, fenced
from gymnasium.utils.env_checker import check_env

import ascend_kernel_gym  # noqa: F401
from ascend_kernel_gym.envs.ascend_triton import AscendTritonEnv
from ascend_kernel_gym.tasks import get_task
from ascend_kernel_gym.wrappers import stack
from ascend_kernel_gym.wrappers.choice import KernelChoiceWrapper
from ascend_kernel_gym.wrappers.compaction import SUMMARY_HEADER, CompactionWrapper
from ascend_kernel_gym.wrappers.kb_retrieval import TIPS_HEADER, KBRetrievalWrapper
from ascend_kernel_gym.wrappers.stack import make_atrl_env

TEST_ID = "AscendTritonPresetTest-v0"


def test_atrl_preset_registers_builds_the_stack_and_passes_check_env() -> None:
    gym.register(id=TEST_ID, entry_point="ascend_kernel_gym.wrappers.stack:make_atrl_env", nondeterministic=True)
    try:
        env = gym.make(TEST_ID, task_ids=[RELU], backend="interpreter", kb_dense=False, budget_tokens=4096)
        kb_layer = env.env.env  # PassiveEnvChecker -> OrderEnforcing -> KBRetrievalWrapper
        while not isinstance(kb_layer, KBRetrievalWrapper):
            kb_layer = kb_layer.env
        assert isinstance(kb_layer.env, CompactionWrapper) and isinstance(env.unwrapped, AscendTritonEnv)
        assert env.unwrapped.max_turns == 8 and kb_layer.env.strategy == "policy"
        check_env(env.unwrapped)

        obs, info = env.reset(seed=0)
        assert info["segment"]["index"] == 0 and "kb" in info
        obs, reward, _, _, info = env.step(fenced(get_task(RELU).solution_source()))
        assert info["eval"]["correct"] and reward > 0 and obs in env.observation_space
        assert {"segment", "kb"} <= set(info)
        json.dumps(info)
        env.close()
    finally:
        gym.registry.pop(TEST_ID, None)


def test_atrl_preset_passes_env_arguments_through() -> None:
    env = make_atrl_env(task_ids=[RELU], backend="interpreter", kb_dense=False, max_turns=2, reward="tiered")
    assert env.unwrapped.max_turns == 2 and env.unwrapped.reward_name == "tiered"


# ---------------------------------------------------------------------- one builder, one order

CHOICE_COMPACTION_KB = ["KernelChoiceWrapper", "CompactionWrapper", "KBRetrievalWrapper"]


@pytest.fixture
def build_calls(monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    """Records every call of ``build_stack`` (callers import it at call time, so they get the spy)."""
    calls: list[dict] = []
    original = stack.build_stack

    def spy(env, **options):
        calls.append(options)
        return original(env, **options)

    monkeypatch.setattr(stack, "build_stack", spy)
    return calls


def test_build_stack_order_is_choice_then_compaction_then_kb() -> None:
    assert list(stack.STACK_ORDER) == CHOICE_COMPACTION_KB
    env = stack.build_stack(
        AscendTritonEnv(task_ids=[RELU], backend="interpreter"),
        kb={"dense": False},
        compaction={"budget_tokens": 4096},
        choice={},
    )
    assert stack.wrapper_chain(env) == CHOICE_COMPACTION_KB
    assert isinstance(env, KBRetrievalWrapper) and isinstance(env.env, CompactionWrapper)
    assert isinstance(env.env.env, KernelChoiceWrapper) and isinstance(env.unwrapped, AscendTritonEnv)
    only_kb = stack.build_stack(AscendTritonEnv(task_ids=[RELU], backend="interpreter"), kb={"dense": False})
    assert stack.wrapper_chain(only_kb) == ["KBRetrievalWrapper"]
    bare = AscendTritonEnv(task_ids=[RELU], backend="interpreter")
    assert stack.build_stack(bare) is bare
    with pytest.raises(TypeError, match="compaction must be a mapping"):
        stack.build_stack(bare, compaction=True)  # type: ignore[arg-type]


def test_the_stack_order_keeps_each_wrappers_changes() -> None:
    """Choice answers and short feedback survive, KB tips land after them, compaction summarises under both."""
    env = stack.build_stack(
        AscendTritonEnv(task_ids=[RELU], backend="interpreter", evaluator=ScriptedEvaluator(), max_turns=6),
        choice={"short_feedback": True},
        compaction={"budget_tokens": 400, "strategy": "rules", "max_compactions": None},
        kb={"dense": False, "k": 2, "skip_recent_turns": 0},
    )
    _, info = env.reset(seed=0)
    assert info["messages"][1]["content"].startswith(f"# Task {RELU}")  # the choice wrapper's short prompt
    compacted = 0
    for _ in range(6):
        _, _, terminated, truncated, info = env.step("Z")  # a letter that is no label still selects a kernel
        last = info["messages"][-1]["content"]
        if info["segment"]["compacted"]:
            compacted += 1
            assert SUMMARY_HEADER in last  # the summary is the new segment's last message ...
        else:
            assert info["messages"][-2] == {"role": "assistant", "content": "Z"}  # the answer as written
            assert last.startswith("Result of turn")  # the choice wrapper's short feedback
        assert info["messages"] == env.unwrapped.messages
        if terminated or truncated:
            assert info["kb"]["skipped"] == "episode_end"
            break
        # ... and the tips for the value mismatch go after it.
        assert [h["id"] for h in info["kb"]["hits"]] == ["eval-value-mismatch"] and info["kb"]["injected"]
        assert last.index(TIPS_HEADER) > 0 and "- [eval-value-mismatch]" in last.split(TIPS_HEADER)[1]
    assert compacted >= 1
    env.close()


def test_every_env_builder_goes_through_build_stack_in_the_documented_order(build_calls, tmp_path) -> None:
    from ascend_kernel_gym.agents.config import SegmentGRPOConfig
    from ascend_kernel_gym.agents.rollout import make_env
    from ascend_kernel_gym.integrations.trl import AscendTritonToolEnv
    from ascend_kernel_gym.leaderboard.runner import EvalConfig, default_env_factory

    pytest.importorskip("torch")
    from ascend_kernel_gym.agents.trainer import config_env_factory

    env_kwargs = {"task_ids": [RELU], "backend": "interpreter"}
    options = {"compaction": {"budget_tokens": 4096}, "kb": {"dense": False}, "choice": {}}
    built = {
        "rollout.make_env": make_env(env_kwargs, **options),
        "trainer": config_env_factory(
            SegmentGRPOConfig(backend="interpreter", output_dir=str(tmp_path), **options), [RELU]
        )(),
        "wrappers.stack.make_atrl_env": stack.make_atrl_env(kb_dense=False, **env_kwargs),
        "AscendTriton-ATRL-v0": gym.make("AscendTriton-ATRL-v0", kb_dense=False, **env_kwargs),
        "leaderboard.runner": default_env_factory(EvalConfig(task_ids=[RELU], backend="interpreter"), "interpreter"),
        "integrations.trl": AscendTritonToolEnv(backend="interpreter")._make_env(),
    }
    assert len(build_calls) == len(built)  # each place built its env through build_stack, once
    expected = {
        "rollout.make_env": CHOICE_COMPACTION_KB,
        "trainer": CHOICE_COMPACTION_KB,
        "wrappers.stack.make_atrl_env": ["CompactionWrapper", "KBRetrievalWrapper"],
        "AscendTriton-ATRL-v0": ["CompactionWrapper", "KBRetrievalWrapper"],
        "leaderboard.runner": [],
        "integrations.trl": [],
    }
    for place, env in built.items():
        stacked = [name for name in stack.wrapper_chain(env) if name in stack.STACK_ORDER]
        assert stacked == expected[place], place
        # The stack's wrappers sit right around the base env (gym.make's checkers go outside them).
        assert stack.wrapper_chain(env)[: len(stacked)] == stacked, place
        assert isinstance(env.unwrapped, AscendTritonEnv), place
        env.close()
