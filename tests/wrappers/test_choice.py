"""KernelChoiceWrapper (wrappers/choice.py): answers map to prepared kernels that the real env evaluates."""

from __future__ import annotations

from dataclasses import replace

import gymnasium as gym
import pytest
from fake_judge import FakeEvaluator

from ascend_kernel_gym.envs.ascend_triton import AscendTritonEnv
from ascend_kernel_gym.tasks.suite import get_task
from ascend_kernel_gym.wrappers.choice import KernelChoice, KernelChoiceWrapper, default_choices

TASKS = ["core/L1/relu", "core/L1/gelu"]


def make_env(evaluator: FakeEvaluator | None = None, **wrapper_kwargs) -> KernelChoiceWrapper:
    base = AscendTritonEnv(
        task_ids=TASKS, backend="interpreter", evaluator=evaluator or FakeEvaluator(), max_turns=4, reward_mode="score"
    )
    return KernelChoiceWrapper(base, **wrapper_kwargs)


def test_choice_wrapper_maps_answers():
    env = make_env()
    _obs, info = env.reset(seed=0, options={"task_id": "core/L1/relu"})
    labels = info["choice"]["labels"]
    kinds = [o.kind for o in env.options]
    assert labels == "ABC" and sorted(kinds) == ["broken", "correct", "hacky"]
    assert info["messages"][1]["content"].startswith("# Task core/L1/relu")
    correct = info["choice"]["correct"]
    _obs, reward, _t, _tr, info = env.step(f"  {correct.lower()} because")
    assert info["choice"]["kind"] == "correct" and info["eval"]["correct"] and reward == pytest.approx(0.5)
    assert info["messages"][-2] == {"role": "assistant", "content": f"  {correct.lower()} because"}
    assert "Result of turn 1 of 4" in info["messages"][-1]["content"]
    # a character that is not a label picks ord(c) % 3
    _obs, _r, _t, _tr, info = env.step("7")
    assert info["choice"]["kind"] == kinds[ord("7") % 3]
    _obs, reward, _t, _tr, info = env.step("")
    assert info["choice"]["answer"] is None and info["format_ok"] is False and reward < 0
    # the prepared kernels are the real ones
    choices = {c.kind: c.code for c in default_choices(get_task("core/L1/relu"))}
    assert choices["correct"] == get_task("core/L1/relu").solution_source()
    assert "class ModelNew(Model)" in choices["hacky"] and "deliberately broken" in choices["broken"]


def test_the_shuffle_is_per_task_and_seed_and_stable_across_resets():
    relu, gelu = get_task(TASKS[0]), get_task(TASKS[1])
    kinds = {seed: [o.kind for o in make_env(seed=seed).options_for(relu)] for seed in range(8)}
    assert len({tuple(k) for k in kinds.values()}) > 1  # the seed moves the correct answer around
    env = make_env(seed=3)
    assert [o.kind for o in env.options_for(relu)] == kinds[3]  # same seed, same order
    assert env.options_for(relu) is env.options_for(relu)
    orders = {tuple(o.kind for o in make_env(seed=s).options_for(gelu)) for s in range(8)}
    assert len(orders) > 1
    _obs, info = env.reset(seed=0, options={"task_id": TASKS[0]})
    first = info["choice"]["correct"]
    _obs, info = env.reset(options={"task_id": TASKS[0]})
    assert info["choice"]["correct"] == first and env.correct_label() == first


def test_explicit_choices_short_feedback_and_the_full_prompt():
    answers = {
        TASKS[0]: [KernelChoice("correct", get_task(TASKS[0]).solution_source()), KernelChoice("other", "no code")],
        TASKS[1]: [KernelChoice("other", "x")],
    }
    evaluator = FakeEvaluator()
    env = make_env(evaluator, choices=answers, labels="XY", short_prompt=False, short_feedback=True)
    _obs, info = env.reset(seed=0, options={"task_id": TASKS[0]})
    assert info["choice"]["labels"] == "XY"
    # the env's own system and task prompts are kept
    assert info["messages"][0]["content"] != "Pick the kernel that solves the task."
    assert "Answer with one letter" not in info["messages"][1]["content"]
    correct = info["choice"]["correct"]
    _obs, reward, _t, _tr, info = env.step(correct)
    assert info["choice"] == {"answer": correct, "kind": "correct", "correct": correct}
    assert info["messages"][-1]["content"] == f"Result of turn 1: {correct} scored {info['score']:.2f}."
    assert reward > 0 and evaluator.calls == 1
    _obs, info = env.reset(options={"task_id": TASKS[1]})
    assert info["choice"]["correct"] is None  # no correct answer among this task's choices
    _obs, _r, _t, _tr, info = env.step(None)
    assert info["choice"]["answer"] is None and info["messages"][-2] == {"role": "assistant", "content": ""}


def test_misuse_is_refused():
    with pytest.raises(ValueError, match="distinct"):
        make_env(labels="AA")
    with pytest.raises(ValueError, match="distinct"):
        make_env(labels="")
    with pytest.raises(TypeError, match="wrap an AscendTritonEnv"):
        KernelChoiceWrapper(gym.make("CartPole-v1"))
    too_many = make_env(choices=lambda task: [KernelChoice("k", "x")] * 3, labels="AB")
    with pytest.raises(ValueError, match=r"3 choices .* only 2 labels"):
        too_many.options_for(get_task(TASKS[0]))
    with pytest.raises(ValueError, match="no choices"):
        make_env(choices=lambda task: []).options_for(get_task(TASKS[0]))
    with pytest.raises(ValueError, match="no reference solution"):
        default_choices(replace(get_task(TASKS[0]), solution_path=None))
