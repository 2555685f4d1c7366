"""AscendTritonEnv (envs/ascend_triton.py).

Bookkeeping (reward modes, episode end, spaces, info, misuse) runs with the instant FakeEvaluator
and a stub feedback text; the issue's "Checked by" list runs against the real evaluator on the CPU
interpreter (the second half of this file).
"""

from __future__ import annotations

import json
import math
import string

import gymnasium as gym
import numpy as np
import pytest
from env_helpers import RELU, FakeEvaluator, fenced

import ascend_kernel_gym  # noqa: F401 - registers the envs
from ascend_kernel_gym.envs.ascend_triton import AscendTritonEnv
from ascend_kernel_gym.envs.rewards import PRESETS
from ascend_kernel_gym.tasks import get_task

INFO_KEYS = {"task_id", "turn", "messages", "eval", "feedback", "score", "best_score", "best_code", "format_ok", "code"}


def make_env(evaluator: FakeEvaluator, **kwargs) -> AscendTritonEnv:
    kwargs.setdefault("task_ids", [RELU])
    return AscendTritonEnv(evaluator=evaluator, **kwargs)


@pytest.fixture(autouse=True)
def _stub_feedback_with_the_fake_evaluator(request: pytest.FixtureRequest) -> None:
    """Tests that use the FakeEvaluator see a stub feedback text, not the evaluator's wording."""
    if "fake_evaluator" in request.fixturenames:
        request.getfixturevalue("fake_feedback")


# ---------------------------------------------------------------------- bookkeeping (FakeEvaluator)


@pytest.mark.parametrize(
    ("kwargs", "error", "pattern"),
    [
        ({"max_turns": 0}, ValueError, "max_turns"),
        ({"max_turns": 2.5}, TypeError, "max_turns"),
        ({"num_trials": 0}, ValueError, "num_trials"),
        ({"max_obs_chars": 100}, ValueError, "max_obs_chars"),
        ({"reward_mode": "sum"}, ValueError, "reward_mode"),
        ({"reward": "fastest"}, ValueError, "reward="),
        ({"reward": 1.0}, TypeError, "reward"),
        ({"target_speedup": -1}, ValueError, "target_speedup"),
        ({"timeout_s": 0}, ValueError, "timeout_s"),
        ({"render_mode": "human"}, ValueError, "render_mode"),
        ({"backend": "tpu"}, ValueError, "backend"),
        ({"backend": "cuda"}, ValueError, "does not match"),
        ({"split": "val"}, ValueError, "split"),
        ({"levels": [0]}, ValueError, "levels"),
        ({"levels": [99]}, ValueError, "no tasks match"),
        ({"task_ids": ["core/L1/nope"]}, ValueError, "task_ids"),
        ({"task_ids": []}, ValueError, "task_ids"),
        ({"profile": "huge"}, ValueError, "profile"),
        ({"prompt_dir": "/no/such/dir"}, ValueError, "prompt_dir"),
        ({"evaluator_options": [1]}, TypeError, "evaluator_options"),
        ({"measure_performance": "yes"}, TypeError, "measure_performance"),
    ],
)
def test_misuse_fails_fast_naming_the_argument(kwargs, error, pattern, fake_evaluator) -> None:
    kwargs.setdefault("task_ids", [RELU])
    evaluator = kwargs.pop("evaluator", fake_evaluator)
    with pytest.raises(error, match=pattern):
        AscendTritonEnv(evaluator=evaluator, **kwargs)


def test_bad_evaluator_object_is_rejected() -> None:
    with pytest.raises(TypeError, match="evaluator"):
        AscendTritonEnv(task_ids=[RELU], evaluator=object())


def test_construction_and_format_failures_start_no_evaluator() -> None:
    env = gym.make("AscendTriton-v0", task_ids=[RELU], backend="interpreter")
    env.reset(seed=0)
    env.step("no code at all")
    assert env.unwrapped._evaluator is None  # the shared pool is only created by an evaluation


def test_format_failure_turn(fake_evaluator) -> None:
    env = make_env(fake_evaluator, reward="tiered")
    env.reset(seed=0)
    _obs, reward, terminated, truncated, info = env.step("I would write a kernel, but here is prose only.")
    assert fake_evaluator.requests == []  # nothing evaluated
    assert info["format_ok"] is False and info["code"] is None and info["evaluated"] is False
    assert info["score"] == PRESETS["tiered"].format_failure == reward
    assert info["eval"]["error_type"] == "no_code"
    assert "```python" in info["feedback"] and "No code was found" in info["feedback"]
    assert not terminated and not truncated


def test_info_keys_json_and_messages(fake_evaluator) -> None:
    env = make_env(fake_evaluator, max_turns=3)
    obs, info = env.reset(seed=0)
    assert info["turn"] == 0 and info["task_id"] == RELU
    assert [m["role"] for m in info["messages"]] == ["system", "user"]
    json.dumps(info)
    action = fenced("class ModelNew: pass  # SPEEDUP=2.0")
    obs, _reward, _term, _trunc, info = env.step(action)
    assert INFO_KEYS <= set(info)
    json.dumps(info)
    assert info["turn"] == 1 and info["format_ok"] and info["code"] == "class ModelNew: pass  # SPEEDUP=2.0\n"
    assert [m["role"] for m in info["messages"]] == ["system", "user", "assistant", "user"]
    assert info["messages"][2]["content"] == action
    assert info["messages"][3]["content"] == info["feedback"]
    assert "[feedback: none]" in info["feedback"] and "turn 1 of 3" in info["feedback"]
    assert info["eval"]["correct"] is True and info["best_code"] == info["code"]
    assert fake_evaluator.requests[0].profile == "small" and fake_evaluator.requests[0].num_trials is None
    assert obs == env.render_observation() and obs.endswith(info["feedback"])
    # the env keeps its own copies: editing info must not change the env
    info["messages"].append({"role": "user", "content": "tamper"})
    info["eval"]["correct"] = False
    assert len(env.messages) == 4 and env.attempts[0]["eval"]["correct"] is True
    assert env.attempts[0]["turn"] == 1 and env.attempts[0]["score"] == info["score"]


def test_truncation_and_misuse_after_the_end(fake_evaluator) -> None:
    env = make_env(fake_evaluator, max_turns=2)
    with pytest.raises(RuntimeError, match="before reset"):
        env.step("x")
    env.reset(seed=0)
    assert env.step("x")[3] is False
    _, _, terminated, truncated, info = env.step("y")
    assert truncated is True and terminated is False and info["turn"] == 2
    assert "No turns left" in info["feedback"]
    with pytest.raises(RuntimeError, match="episode ended"):
        env.step("z")
    env.reset()
    assert env.turn == 0 and env.attempts == [] and env.best_score is None


def test_target_speedup_terminates_only_on_a_reached_speedup(fake_evaluator) -> None:
    env = make_env(fake_evaluator, max_turns=5, target_speedup=1.5)
    env.reset(seed=0)
    assert env.step(fenced("class ModelNew: pass"))[2] is False  # neutral speedup does not count
    assert env.step(fenced("class ModelNew: pass  # SPEEDUP=1.2"))[2] is False
    assert env.step(fenced("class ModelNew: pass  # SPEEDUP=9 HACK"))[2] is False  # hacks never count
    _, _, terminated, truncated, info = env.step(fenced("class ModelNew: pass  # SPEEDUP=1.6"))
    assert terminated is True and truncated is False and info["terminated_by_target"] is True


def test_target_speedup_with_the_estimate_flag(fake_evaluator, monkeypatch) -> None:
    original = fake_evaluator.evaluate

    def with_estimate(request):
        result = original(request)
        result.estimate = {"est_speedup": 2.0}
        return result

    monkeypatch.setattr(fake_evaluator, "evaluate", with_estimate)
    env = make_env(fake_evaluator, target_speedup=1.5)
    env.reset(seed=0)
    assert env.step(fenced("class ModelNew: pass"))[2] is False
    env = make_env(fake_evaluator, target_speedup=1.5, use_estimated_speedup=True)
    env.reset(seed=0)
    _, _reward, terminated, _, info = env.step(fenced("class ModelNew: pass"))
    assert terminated is True and info["score"] == pytest.approx(0.75)  # default preset with speedup 2.0


SEQUENCE = [
    "prose",  # -0.8
    fenced("broken"),  # -0.4
    fenced("class ModelNew: pass  # SPEEDUP=2.0"),  # 0.75
    fenced("class ModelNew: pass  # HACK"),  # -1.0
    fenced("class ModelNew: pass  # SPEEDUP=4.0"),  # 1.0
    fenced("class ModelNew: pass"),  # 0.5
]


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_improvement_return_equals_best_score(fake_evaluator, preset) -> None:
    env = make_env(fake_evaluator, max_turns=len(SEQUENCE), reward=preset)
    env.reset(seed=0)
    rewards, scores = [], []
    for action in SEQUENCE:
        _, reward, _, _, info = env.step(action)
        rewards.append(reward)
        scores.append(info["score"])
    assert math.isclose(sum(rewards), max(scores), abs_tol=1e-9)
    assert info["best_score"] == max(scores)


def test_improvement_return_with_only_negative_scores(fake_evaluator) -> None:
    env = make_env(fake_evaluator, max_turns=3)
    env.reset(seed=0)
    rewards = [env.step(a)[1] for a in ["prose", fenced("broken"), "prose"]]
    assert rewards == [-0.8, pytest.approx(0.4), 0.0]
    assert sum(rewards) == pytest.approx(-0.4) == env.best_score


def test_score_and_terminal_modes(fake_evaluator) -> None:
    scores_env = make_env(fake_evaluator, max_turns=3, reward_mode="score")
    scores_env.reset(seed=0)
    assert [scores_env.step(a)[1] for a in SEQUENCE[:3]] == [-0.8, -0.4, pytest.approx(0.75)]
    terminal_env = make_env(fake_evaluator, max_turns=3, reward_mode="terminal")
    terminal_env.reset(seed=0)
    assert [terminal_env.step(a)[1] for a in SEQUENCE[:3]] == [0.0, 0.0, pytest.approx(0.75)]


def test_best_code_is_the_best_scoring_attempt(fake_evaluator) -> None:
    env = make_env(fake_evaluator, max_turns=3)
    env.reset(seed=0)
    env.step(fenced("class ModelNew: pass  # SPEEDUP=3.0"))
    _, _, _, _, info = env.step(fenced("class ModelNew: pass  # SPEEDUP=1.0"))
    assert info["best_code"] == "class ModelNew: pass  # SPEEDUP=3.0\n"
    assert info["best_score"] > info["score"]


def test_callable_reward_gets_result_and_task(fake_evaluator) -> None:
    seen = []

    def reward(result, task):
        seen.append((result.correct, task.id))
        return 42.0

    env = make_env(fake_evaluator, reward=reward, reward_mode="score")
    env.reset(seed=0)
    assert env.step(fenced("class ModelNew: pass"))[1] == 42.0
    assert seen == [(True, RELU)]
    assert env.reward_name == "callable:reward"


def test_callable_reward_returning_nan_is_a_loud_error(fake_evaluator) -> None:
    env = make_env(fake_evaluator, reward=lambda r, t: float("nan"))
    env.reset(seed=0)
    with pytest.raises(ValueError, match="finite"):
        env.step("x")


@pytest.mark.parametrize(
    "action",
    [
        None,
        "",
        b"\xff\xfe bytes",
        12345,
        "数据 “quotes” \U0001f680 \x00\x07 \r\n",
        "```python\nclass ModelNew:  # ünïcödé ✓\n    pass\n```",
        "Z" * 600_000,
        "```python\n" + "x = 1\n" * 100_000,
    ],
)
def test_any_action_is_a_turn_and_obs_stays_in_space(fake_evaluator, action) -> None:
    env = make_env(fake_evaluator, max_obs_chars=20_000)
    obs, _ = env.reset(seed=0)
    assert obs in env.observation_space
    obs, reward, _, _, info = env.step(action)
    assert obs in env.observation_space and len(obs) <= 20_000
    assert isinstance(reward, float) and math.isfinite(reward)
    json.dumps(info)
    assert len(env.messages[-2]["content"]) <= 20_000 + 100  # stored answers are capped too


def test_clipped_observation_keeps_task_and_latest_feedback(fake_evaluator) -> None:
    env = make_env(fake_evaluator, max_obs_chars=8_000, max_turns=4)
    first, _ = env.reset(seed=0)
    for _ in range(3):
        obs, *_, info = env.step("W" * 5_000)
    assert len(obs) <= 8_000
    assert obs.startswith(first[:2000])  # system message and the start of the task prompt
    assert obs.endswith(info["feedback"])
    assert "characters of earlier conversation elided" in obs


def test_harness_exception_becomes_a_failed_turn(fake_evaluator, monkeypatch) -> None:
    def explode(request):
        raise ConnectionError("pool died")

    monkeypatch.setattr(fake_evaluator, "evaluate", explode)
    env = make_env(fake_evaluator)
    env.reset(seed=0)
    with pytest.warns(RuntimeWarning, match="pool died"):
        _, reward, _, _, info = env.step(fenced("class ModelNew: pass"))
    assert info["eval"]["error_type"] == "harness_error" and reward == -0.6


def test_set_messages_and_render(fake_evaluator) -> None:
    env = make_env(fake_evaluator, render_mode="ansi")
    assert env.render() == ""
    env.reset(seed=0)
    env.set_messages([{"role": "system", "content": "S"}, {"role": "user", "content": "summary ✓"}])
    assert env.render_observation() == "### system\nS\n\n### user\nsummary [ok]"
    assert env.render() == env.render_observation()
    _, _, _, _, info = env.step("prose")
    assert [m["role"] for m in info["messages"]] == ["system", "user", "assistant", "user"]
    with pytest.raises(ValueError, match=r"messages\[0\]"):
        env.set_messages([{"role": "user"}])
    with pytest.raises(ValueError, match=r"messages\[1\]"):
        env.set_messages([{"role": "user", "content": "a"}, "b"])
    assert make_env(fake_evaluator).render() is None


def test_reset_options(fake_evaluator, tmp_path) -> None:
    env = make_env(fake_evaluator, task_ids=None, split="all")
    _, info = env.reset(seed=0, options={"task_id": RELU})
    assert info["task_id"] == RELU and env.task.id == RELU
    with pytest.raises(ValueError, match="unknown reset options"):
        env.reset(options={"level": 1})
    with pytest.raises(ValueError, match="task_id"):
        env.reset(options={"task_id": "core/L1/does_not_exist"})
    from ascend_kernel_gym.tasks import get_task

    task_file = tmp_path / "double.py"
    task_file.write_text(
        "import torch\nimport torch.nn as nn\nN = 8\n\nclass Model(nn.Module):\n"
        "    def forward(self, x):\n        return x * 2\n\n"
        "def get_inputs():\n    return [torch.randn(N)]\n\ndef get_init_inputs():\n    return []\n"
    )
    _, info = env.reset(options={"task_id": str(task_file)})
    assert info["task_id"] == "file/double" and "return x * 2" in env.messages[1]["content"]
    _, info = env.reset(options={"task": get_task(RELU)})
    assert info["task_id"] == RELU


def test_levels_and_task_ids_filter_the_task_list(fake_evaluator) -> None:
    env = make_env(fake_evaluator, task_ids=None, split="all", levels=[1])
    assert env.tasks and all(t.level == 1 for t in env.tasks)
    env = make_env(fake_evaluator, task_ids=[RELU])
    assert [t.id for t in env.tasks] == [RELU]


def test_evaluator_backend_is_adopted(fake_evaluator) -> None:
    env = make_env(fake_evaluator, backend="auto")
    assert env.backend == "interpreter"
    _, info = env.reset(seed=0)
    assert info["backend"] == "interpreter" and info["profile"] == "small"
    assert "Triton's interpreter" in env.messages[1]["content"]


def test_evaluator_object_in_gym_make_is_shared_not_copied(fake_evaluator) -> None:
    """gym.make keeps kwargs in env.spec and Gymnasium deep-copies specs; the pool must be shared."""
    import warnings

    from gymnasium.utils.env_checker import check_env

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # Wrapper.spec warns when the spec cannot be deep-copied
        env = gym.make("AscendTriton-v0", task_ids=[RELU], evaluator=fake_evaluator)
        assert env.spec is not None and env.spec.kwargs["task_ids"] == [RELU]
        again = env.spec.make()
        check_env(env.unwrapped)
    assert again.unwrapped.evaluator is fake_evaluator is env.unwrapped.evaluator
    again.reset(seed=0)
    again.step(fenced("class ModelNew: pass"))
    assert len(fake_evaluator.requests) == 1


def test_byte_order_mark_is_not_part_of_the_code() -> None:
    from ascend_kernel_gym.envs.ascend_triton import _coerce_action

    code = "import torch\n"
    assert _coerce_action("\ufeff" + code) == code
    assert _coerce_action(("\ufeff" + code).encode("utf-8")) == code
    assert _coerce_action(code.encode("utf-8")) == code


# ---------------------------------------------------------------------- the real evaluator (interpreter)

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
