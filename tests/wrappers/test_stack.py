"""The ATRL preset stack (env + compaction + KB tips), built with trigger-only retrieval to stay fast."""

from __future__ import annotations

import json

import gymnasium as gym
from env_helpers import RELU, fenced
from gymnasium.utils.env_checker import check_env

import ascend_kernel_gym  # noqa: F401
from ascend_kernel_gym.envs.ascend_triton import AscendTritonEnv
from ascend_kernel_gym.tasks import get_task
from ascend_kernel_gym.wrappers.compaction import CompactionWrapper
from ascend_kernel_gym.wrappers.kb_retrieval import KBRetrievalWrapper
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
