"""The policy interface (agents/policy.py): TaskAwarePolicy finds the task of a context, describe()."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from ascend_kernel_gym.agents.policy import Generation, Policy, TaskAwarePolicy


class Echo(TaskAwarePolicy):
    name = "echo"

    def answer(self, task_id, messages):
        return Generation(text=task_id, meta={"n": len(messages)})


def task(task_id: str, source: str) -> SimpleNamespace:
    return SimpleNamespace(
        id=task_id, profiles={"full": {}, "small": {}}, prompt_source=lambda profile: f"{source} ({profile})"
    )


TASKS = [task("s/L1/relu", "def relu(x): ..."), task("s/L1/gelu", "def gelu(x): ...")]


def test_the_task_is_found_by_id_first_then_by_its_prompt_source() -> None:
    policy = Echo(TASKS)
    assert policy.find_task([{"role": "user", "content": "# Task s/L1/gelu"}]) == "s/L1/gelu"
    by_source = [{"role": "system", "content": "s"}, {"role": "user", "content": "solve:\ndef relu(x): ... (small)"}]
    assert policy.find_task(by_source) == "s/L1/relu"
    # an id anywhere wins over a source match
    both = [{"role": "user", "content": "def relu(x): ... (full)"}, {"role": "user", "content": "s/L1/gelu"}]
    assert policy.find_task(both) == "s/L1/gelu"
    with pytest.raises(ValueError, match="cannot tell which of 2 tasks"):
        policy.find_task([{"role": "user", "content": "def silu(x): ... (full)"}])


def test_generate_answers_in_order_and_generate_for_tasks_checks_lengths() -> None:
    policy = Echo(TASKS)
    batch = [[{"role": "user", "content": "s/L1/gelu"}], [{"role": "user", "content": "s/L1/relu"}, {"role": "x"}]]
    assert [(g.text, g.meta["n"]) for g in policy.generate(batch)] == [("s/L1/gelu", 1), ("s/L1/relu", 2)]
    assert [g.text for g in policy.generate_for_tasks(batch, ["s/L1/relu", "s/L1/relu"])] == ["s/L1/relu"] * 2
    with pytest.raises(ValueError, match="2 contexts but 1 task ids"):
        policy.generate_for_tasks(batch, ["s/L1/relu"])


def test_describe_names_the_class_and_policies_must_generate() -> None:
    assert Echo(TASKS).describe() == {"name": "echo", "class": f"{__name__}.Echo"}
    with pytest.raises(TypeError):
        Policy()  # type: ignore[abstract]
    with pytest.raises(NotImplementedError):
        TaskAwarePolicy(TASKS).answer("s/L1/relu", [])
    assert Generation(text="x").token_ids == [] and Generation(text="y").meta == {}
