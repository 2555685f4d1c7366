"""Scripted policies (agents/scripted.py): turn counting, task ids, scripted, reference and choice policies."""

from __future__ import annotations

import pytest

from ascend_kernel_gym.agents.scripted import (
    ChoicePolicy,
    ReferencePolicy,
    ScriptedPolicy,
    task_id_from_messages,
    turns_so_far,
)


def _ctx(n_assistant: int, task_line: str = "# Task core/L1/relu (level 1, activation)"):
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": task_line}]
    for k in range(n_assistant):
        messages += [
            {"role": "assistant", "content": f"a{k}"},
            {"role": "user", "content": f"## Result of turn {k + 1}"},
        ]
    return messages


def test_turn_counting_and_task_id():
    assert turns_so_far(_ctx(0)) == 0
    assert turns_so_far(_ctx(2)) == 2
    # after compaction only the summary remains, but it mentions turn 3
    compacted = [*_ctx(0), {"role": "user", "content": "Summary ... Result of turn 3 ..."}]
    assert turns_so_far(compacted) == 3
    # the compaction wrapper's summary ends with the turns left; the task prompt gives the total
    summarised = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "# Task core/L1/relu\nYou have 4 turn(s). Write..."},
        {"role": "user", "content": "## Your summary ...\n\nYou have 1 turn(s) left. Reply with..."},
    ]
    assert turns_so_far(summarised) == 3
    assert task_id_from_messages(_ctx(1)) == "core/L1/relu"
    assert task_id_from_messages([{"role": "user", "content": "no id"}]) is None


def test_scripted_policy_answers_by_turn():
    policy = ScriptedPolicy(["first", "second"])
    assert [g.text for g in policy.generate([_ctx(0), _ctx(1), _ctx(5)])] == ["first", "second", "second"]
    with pytest.raises(ValueError):
        ScriptedPolicy([])


def test_reference_policy_breaks_then_submits_solution():
    from ascend_kernel_gym.tasks.suite import get_task

    solution = get_task("core/L1/relu").solution_source()
    policy = ReferencePolicy(broken_attempts=1)
    first, second = policy.generate([_ctx(0), _ctx(1)])
    assert "deliberately broken" in first.text and first.text.startswith("```python")
    assert second.text == f"```python\n{solution.rstrip()}\n```"
    with pytest.raises(ValueError, match="Task"):
        policy.generate([[{"role": "user", "content": "nothing"}]])


def test_reference_policy_is_one_class_for_rollouts_and_the_eval_runner():
    from dataclasses import replace

    from ascend_kernel_gym.leaderboard import agents as lb_agents
    from ascend_kernel_gym.tasks import load_suite
    from ascend_kernel_gym.tasks.variants import fenced

    assert lb_agents.ReferencePolicy is ReferencePolicy
    relu, sum_dim = load_suite("core", split="all", task_ids=["core/L1/relu", "core/L1/sum_dim"])
    policy = lb_agents.build_policy("reference", [relu, sum_dim])
    assert type(policy) is ReferencePolicy and policy.batch_wait_s == 0.0 and policy.name == "reference"
    # The runner names the task, whatever the context says.
    named = policy.generate_for_tasks([_ctx(1)], ["core/L1/sum_dim"])[0]
    assert named.text == fenced(sum_dim.solution_source()) and named.meta["task_id"] == "core/L1/sum_dim"
    # Without a name: the '# Task <id>' line first, then the ids and sources of the given tasks.
    assert policy.generate([_ctx(0)])[0].meta["task_id"] == "core/L1/relu"
    found = policy.generate([[{"role": "user", "content": "Solve core/L1/sum_dim please"}]])[0]
    assert found.meta["task_id"] == "core/L1/sum_dim"
    assert policy.calls == 3
    described = policy.describe()
    assert described["kind"] == "scripted" and described["broken_attempts"] == 0
    assert described["class"] == "ascend_kernel_gym.agents.scripted.ReferencePolicy"
    # Broken attempts also apply when the runner names the task.
    breaking = ReferencePolicy([relu], broken_attempts=2)
    first, third = breaking.generate_for_tasks([_ctx(1, "x"), _ctx(2, "x")], ["core/L1/relu"] * 2)
    assert "deliberately broken" in first.text and third.text == fenced(relu.solution_source())
    with pytest.raises(ValueError, match="no bundled reference solution"):
        ReferencePolicy([replace(relu, solution_path=None)])
    with pytest.raises(ValueError, match="broken_attempts"):
        ReferencePolicy(broken_attempts=-1)


def test_choice_policy_probabilities_and_sequence():
    always_b = ChoicePolicy(probs=[0, 1, 0])
    assert {g.text for g in always_b.generate([_ctx(0)] * 20)} == {"B"}
    seq = ChoicePolicy(sequence=["C", "A"])
    assert [g.text for g in seq.generate([_ctx(0), _ctx(1), _ctx(3)])] == ["C", "A", "A"]
    with pytest.raises(ValueError, match="probs"):
        ChoicePolicy(probs=[1, 0])
