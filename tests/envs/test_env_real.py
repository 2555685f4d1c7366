"""The issue's "Checked by" list, against the real evaluator on the CPU interpreter."""

from __future__ import annotations

import json
import math
import string
import warnings

import gymnasium as gym
import numpy as np
import pytest
from env_helpers import RELU, fenced
from gymnasium.utils.env_checker import check_env

import ascend_kernel_gym  # noqa: F401 - registers the envs
from ascend_kernel_gym.envs.ascend_triton import AscendTritonEnv
from ascend_kernel_gym.tasks import get_task

PACKAGE_IDS = sorted(
    env_id
    for env_id, spec in gym.registry.items()
    if isinstance(spec.entry_point, str) and spec.entry_point.startswith("ascend_kernel_gym")
)
BROKEN = fenced(
    "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n\n"
    "@triton.jit\ndef k(x_ptr, n, BLOCK: tl.constexpr):\n    x = tl.load(x_ptr + tl.arange(0, BLOCK)) +\n\n"
    "class ModelNew(nn.Module):\n    def forward(self, x):\n        return x\n"
)


def solution(task_id: str = RELU) -> str:
    source = get_task(task_id).solution_source()
    assert source is not None
    return fenced(source)


def make(**kwargs) -> AscendTritonEnv:
    kwargs.setdefault("task_ids", [RELU])
    kwargs.setdefault("backend", "interpreter")
    return gym.make("AscendTriton-v0", **kwargs).unwrapped


def test_package_registers_its_ids() -> None:
    assert "AscendTriton-v0" in PACKAGE_IDS
    assert gym.spec("AscendTriton-v0").nondeterministic is True


# Preset ids may build heavier stacks (e.g. dense KB retrieval loads a sentence-transformers model).
ID_PARAMS = [pytest.param(i, marks=() if i == "AscendTriton-v0" else pytest.mark.slow) for i in PACKAGE_IDS]


@pytest.mark.parametrize("env_id", ID_PARAMS)
def test_gymnasium_check_env_passes_for_every_registered_id(env_id: str) -> None:
    env = gym.make(env_id)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env.unwrapped)
    gym_warnings = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    assert gym_warnings == []
    env.close()


def test_gymnasium_make_with_module_prefix() -> None:
    env = gym.make("ascend_kernel_gym:AscendTriton-v0", task_ids=[RELU], backend="interpreter")
    obs, _ = env.reset(seed=0)
    assert obs in env.observation_space and "core/L1/relu" in obs
    env.close()


def test_sb3_check_env_fails_on_text_spaces_as_documented() -> None:
    """SB3 has no Text support: it does not warn, it asserts the observation is a numpy array (docs/environment.md)."""
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    env = make()
    with pytest.raises(AssertionError, match=r"observation returned by `reset\(\)` method must be a numpy array"):
        sb3_check_env(env)


def test_reference_solution_in_one_step_is_correct_with_positive_reward() -> None:
    env = make()
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(solution())
    ev = info["eval"]
    assert ev["correct"] is True and ev["hack"] is False, ev["error_message"]
    assert ev["backend"] == "interpreter" and ev["speedup"] is None
    assert reward > 0 and info["score"] == 0.5  # default preset, neutral speedup on the interpreter
    assert info["evaluated"] and info["evaluator_id"]
    assert obs in env.observation_space and not terminated and not truncated
    json.dumps(info)


def test_random_characters_are_a_failure_turn_without_exception() -> None:
    env = make(max_turns=3)
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    garbage = "".join(rng.choice(list(string.printable + "é数🚀"), size=5000))
    obs, reward, _, _, info = env.step(garbage)
    assert info["format_ok"] is False and info["eval"]["error_type"] == "no_code" and reward == -0.8
    assert obs in env.observation_space
    # random characters inside a code block go through the real evaluator and fail cleanly
    obs, reward, _, _, info = env.step(fenced(garbage[:2000].replace("`", "'")))
    assert info["evaluated"] and not info["eval"]["correct"] and info["score"] < 0
    assert obs in env.observation_space and info["feedback"]
    json.dumps(info)


def test_episode_truncates_at_max_turns() -> None:
    env = make(max_turns=2)
    env.reset(seed=0)
    _, _, terminated, truncated, _ = env.step(BROKEN)
    assert (terminated, truncated) == (False, False)
    _, _, terminated, truncated, info = env.step("still thinking")
    assert (terminated, truncated) == (False, True) and info["turn"] == 2


def test_equal_seeds_give_equal_task_sequences() -> None:
    def sequence(seed: int) -> list[str]:
        env = make(task_ids=None, split="all")
        ids = [env.reset(seed=seed)[1]["task_id"]]
        ids += [env.reset()[1]["task_id"] for _ in range(7)]
        return ids

    assert len(make(task_ids=None, split="all").tasks) >= 10
    assert sequence(7) == sequence(7)
    assert sequence(7) != sequence(8)


def test_improvement_mode_return_equals_best_score() -> None:
    env = make(max_turns=3)
    env.reset(seed=0)
    rewards, scores = [], []
    for action in [BROKEN, solution(), "no code"]:
        _, reward, _, _, info = env.step(action)
        rewards.append(reward)
        scores.append(info["score"])
    assert scores[0] < 0 < scores[1]
    assert math.isclose(sum(rewards), max(scores)) and math.isclose(info["best_score"], max(scores))
    assert info["best_code"] == get_task(RELU).solution_source().strip("\n") + "\n"
