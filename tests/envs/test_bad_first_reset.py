"""A bad first ``reset`` raises, and the env made by ``gym.make`` (gymnasium's checker in place) stays usable."""

from __future__ import annotations

import gymnasium as gym
import pytest

import ascend_kernel_gym  # noqa: F401 - registers the environments

RELU = "core/L1/relu"


@pytest.mark.parametrize(
    ("env_id", "bad_options"),
    [
        ("AscendTriton-v0", {"task_id": "core/L1/no_such_task"}),
        ("AscendTriton-v0", {"colour": "red"}),
        ("AscendTriton-ATRL-v0", {"task_id": "core/L1/no_such_task"}),
    ],
)
def test_env_is_usable_after_a_bad_first_reset(fake_evaluator, env_id, bad_options) -> None:
    extra = {"kb_dense": False, "compaction_strategy": "rules"} if env_id.endswith("ATRL-v0") else {}
    env = gym.make(env_id, evaluator=fake_evaluator, max_turns=3, **extra)
    assert "PassiveEnvChecker" in str(env)  # gymnasium's checker wraps the env, as for every user
    with pytest.raises(ValueError):
        env.reset(options=bad_options)
    with pytest.raises(RuntimeError, match=r"before reset"):
        env.step("no episode yet")  # a failed reset leaves no half-started episode
    obs, info = env.reset(options={"task_id": RELU})
    assert info["task_id"] == RELU and isinstance(obs, str)
    for answer in ("no code here", "```python\nclass ModelNew: pass\n```"):
        obs, reward, _, _, info = env.step(answer)
        assert isinstance(obs, str) and isinstance(float(reward), float)
    assert info["turn"] == 2 and info["eval"]["correct"]
    obs, info = env.reset(options={"task_id": RELU})  # and later episodes work as usual
    env.step("no code")
    env.close()


def test_a_bad_later_reset_still_raises_and_the_next_valid_one_works(fake_evaluator) -> None:
    env = gym.make("AscendTriton-v0", evaluator=fake_evaluator, max_turns=2)
    env.reset(options={"task_id": RELU})
    env.step("no code")
    with pytest.raises(ValueError, match="not a known task"):
        env.reset(options={"task_id": "nope"})
    env.reset(options={"task_id": RELU})
    _, _, _, _, info = env.step("no code")
    assert info["turn"] == 1
    env.close()
