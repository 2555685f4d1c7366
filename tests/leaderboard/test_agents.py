"""``akg eval --agent`` specs (leaderboard/agents.py): built-in agents, ``module:Class`` and factories."""

from __future__ import annotations

import pytest

from ascend_kernel_gym.agents.policy import Generation, Policy
from ascend_kernel_gym.leaderboard.agents import ReferencePolicy, build_policy
from ascend_kernel_gym.tasks.suite import load_suite

TASKS = ["core/L1/relu", "core/L1/sigmoid", "core/L1/gelu"]


class CountingPolicy(Policy):
    """A policy class taking one option (resolved from this module by name)."""

    name = "counting"

    def __init__(self, fail_on_call: int | None = None) -> None:
        self.fail_on_call = fail_on_call

    def generate(self, batch):
        return [Generation(text="") for _ in batch]


class TaskListPolicy(CountingPolicy):
    """Takes the run's tasks and any keyword options."""

    def __init__(self, tasks, **options) -> None:
        super().__init__()
        self.task_ids = [t.id for t in tasks]
        self.options = options


def make_task_policy(tasks, temperature=None):
    """A factory function: gets only the options it names."""
    policy = CountingPolicy()
    policy.task_ids = [t.id for t in tasks]
    policy.temperature = temperature
    return policy


def not_a_policy():
    return object()


def test_reference_policy_answers_with_the_bundled_solution():
    tasks = load_suite("core", split="all", task_ids=TASKS)
    policy = ReferencePolicy(tasks)
    gens = policy.generate_for_tasks([[{"role": "user", "content": "x"}]], [TASKS[1]])
    assert tasks[1].solution_source().strip() in gens[0].text and gens[0].text.startswith("```python")
    # without task ids it finds the task in the context
    gens = policy.generate([[{"role": "user", "content": f"Task {TASKS[2]}: write it"}]])
    assert tasks[2].solution_source().strip() in gens[0].text
    with pytest.raises(ValueError, match="cannot tell"):
        policy.generate([[{"role": "user", "content": "no task here"}]])


def test_agent_specs():
    tasks = load_suite("core", split="all", task_ids=TASKS[:1])
    assert isinstance(build_policy("reference", tasks), ReferencePolicy)
    policy = build_policy(f"{__name__}:CountingPolicy", tasks, {"fail_on_call": 7, "endpoint": "ignored"})
    assert isinstance(policy, CountingPolicy) and policy.fail_on_call == 7
    with pytest.raises(ValueError, match="not a subclass"):
        build_policy("json:JSONDecoder", tasks)
    with pytest.raises(ValueError, match="cannot import"):
        build_policy("no_such_module_xyz:Thing", tasks)
    with pytest.raises(ValueError, match="--endpoint"):
        build_policy("openai", tasks, {"model": "m"})
    with pytest.raises(ValueError, match="--model-path"):
        build_policy("hf", tasks, {})
    openai = build_policy("openai", tasks, {"endpoint": "http://127.0.0.1:9/v1", "model": "m", "temperature": 0.5})
    assert openai.describe()["model"] == "m" and openai.describe()["temperature"] == 0.5


def test_options_reach_a_class_or_factory_only_when_it_accepts_them():
    tasks = load_suite("core", split="all", task_ids=TASKS[:2])
    options = {"temperature": 0.3, "endpoint": None, "agent_kwargs": '{"beam": 4}'}
    policy = build_policy(f"{__name__}:TaskListPolicy", tasks, options)
    assert policy.task_ids == TASKS[:2]
    # **options takes everything given (JSON agent_kwargs merged in), never the options left unset
    assert policy.options == {"temperature": 0.3, "beam": 4}
    made = build_policy(f"{__name__}:make_task_policy", tasks, {"temperature": 0.7, "model": "ignored"})
    assert made.task_ids == TASKS[:2] and made.temperature == 0.7
    made = build_policy(f"{__name__}:make_task_policy", tasks, {"agent_kwargs": {"temperature": 0.1}})
    assert made.temperature == 0.1  # a dict of agent_kwargs works like its JSON text


def test_bad_specs_name_the_problem():
    tasks = load_suite("core", split="all", task_ids=TASKS[:1])
    with pytest.raises(ValueError, match="expected 'reference', 'openai', 'hf' or 'module:Class'"):
        build_policy("no-colon", tasks)
    with pytest.raises(ValueError, match="has no attribute 'Missing'"):
        build_policy(f"{__name__}:Missing", tasks)
    with pytest.raises(ValueError, match="returned object, not a Policy"):
        build_policy(f"{__name__}:not_a_policy", tasks)
    with pytest.raises(ValueError, match="not a class or factory"):
        build_policy(f"{__name__}:TASKS", tasks)
