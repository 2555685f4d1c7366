"""Policies for ``akg eval --agent``: the bundled ``reference`` agent and the agent-spec resolver.

Agent specs:

- ``reference``: :class:`ReferencePolicy`, submits each task's bundled reference solution.
- ``openai``: an OpenAI-compatible chat-completions endpoint (``agents.openai_http.OpenAIChatPolicy``).
- ``hf``: a local Hugging Face causal LM (``agents.hf.HFPolicy``).
- ``module:Class`` (or ``module:factory``): any importable :class:`Policy` subclass or factory.
"""

from __future__ import annotations

import importlib
import inspect
import json
from collections.abc import Sequence
from typing import Any

from ascend_kernel_gym.agents.policy import Generation, Message, Policy
from ascend_kernel_gym.tasks.task import Task

BUILTIN_AGENTS = ("reference", "openai", "hf")


class TaskAwarePolicy(Policy):
    """A policy the runner also tells which task each context belongs to (scripted baselines).

    The runner calls :meth:`generate_for_tasks`; :meth:`generate` works without task ids by
    finding the task in the context (its id or its reference source).
    """

    def __init__(self, tasks: Sequence[Task]) -> None:
        self.tasks = {task.id: task for task in tasks}

    def generate(self, batch: Sequence[Sequence[Message]]) -> list[Generation]:
        return self.generate_for_tasks(batch, [self.find_task(messages) for messages in batch])

    def generate_for_tasks(self, batch: Sequence[Sequence[Message]], task_ids: Sequence[str]) -> list[Generation]:
        """Answer every context in ``batch``; ``task_ids[i]`` is the task of ``batch[i]``."""
        if len(batch) != len(task_ids):
            raise ValueError(f"generate_for_tasks: {len(batch)} contexts but {len(task_ids)} task ids")
        return [self.answer(task_id, messages) for messages, task_id in zip(batch, task_ids, strict=True)]

    def answer(self, task_id: str, messages: Sequence[Message]) -> Generation:
        raise NotImplementedError

    def find_task(self, messages: Sequence[Message]) -> str:
        """The id of the task a context is about (raises ``ValueError`` when none matches)."""
        text = "\n".join(m.get("content", "") for m in messages)
        for task_id in self.tasks:
            if task_id in text:
                return task_id
        for task_id, task in self.tasks.items():
            for profile in task.profiles:
                body = task.prompt_source(profile).strip()
                if body and body in text:
                    return task_id
        raise ValueError(f"{type(self).__name__}: cannot tell which of {len(self.tasks)} tasks this context is about")


class ReferencePolicy(TaskAwarePolicy):
    """Submits the bundled reference solution of each task, every turn.

    A baseline and a harness check: on a healthy install every task with a solution is correct.

    Args:
        tasks: the tasks it may be asked about (each needs ``solution_path``).
    """

    name = "reference"
    #: Answers are instant: no point waiting for a generation batch to fill up.
    batch_wait_s = 0.0

    def __init__(self, tasks: Sequence[Task]) -> None:
        super().__init__(tasks)
        missing = [t.id for t in tasks if t.solution_path is None]
        if missing:
            raise ValueError(f"reference agent: no bundled reference solution for {missing}")
        self.calls = 0

    def answer(self, task_id: str, messages: Sequence[Message]) -> Generation:
        if task_id not in self.tasks:
            raise KeyError(f"reference agent: unknown task {task_id!r}")
        self.calls += 1
        source = self.tasks[task_id].solution_source() or ""
        return Generation(text=f"```python\n{source.rstrip()}\n```", meta={"source": "bundled reference solution"})

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "kind": "scripted", "description": "bundled reference solutions"}


def _import_object(spec: str) -> Any:
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ValueError(f"--agent {spec!r}: expected 'reference', 'openai', 'hf' or 'module:Class'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"--agent {spec!r}: cannot import module {module_name!r} ({exc})") from exc
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"--agent {spec!r}: module {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    return obj


def _construct(factory: Any, options: dict[str, Any], tasks: Sequence[Task], spec: str) -> Policy:
    """Call ``factory`` with the options it accepts (plus ``tasks`` when it takes that argument)."""
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        params = {}
    takes_kwargs = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    kwargs = {k: v for k, v in options.items() if v is not None and (takes_kwargs or k in params)}
    if "tasks" in params:
        kwargs["tasks"] = list(tasks)
    policy = factory(**kwargs)
    if not isinstance(policy, Policy):
        raise ValueError(f"--agent {spec!r}: {factory!r} returned {type(policy).__name__}, not a Policy")
    return policy


def build_policy(spec: str, tasks: Sequence[Task], options: dict[str, Any] | None = None) -> Policy:
    """Resolve an ``--agent`` spec to a policy.

    Args:
        spec: ``reference``, ``openai``, ``hf`` or ``module:Class``.
        tasks: the run's tasks (scripted policies need them).
        options: constructor options (``endpoint``, ``model``, ``api_key_env``, ``model_path``,
            ``temperature``, ``max_tokens``, plus ``agent_kwargs`` merged in); only those the
            constructor accepts are passed.

    Raises:
        ValueError: unknown spec, missing required option, or an object that is not a Policy.
    """
    options = dict(options or {})
    extra = options.pop("agent_kwargs", None) or {}
    if isinstance(extra, str):
        extra = json.loads(extra)
    options.update(extra)
    if spec == "reference":
        return ReferencePolicy(tasks)
    if spec == "openai":
        from ascend_kernel_gym.agents.openai_http import OpenAIChatPolicy

        if not options.get("endpoint") or not options.get("model"):
            raise ValueError("--agent openai needs --endpoint URL and --model NAME")
        kwargs = {"model": options.pop("model"), "base_url": options.pop("endpoint")}
        for key in ("api_key_env", "temperature", "max_tokens"):
            if options.get(key) is not None:
                kwargs[key] = options.pop(key)
        options.pop("model_path", None)
        return OpenAIChatPolicy(**kwargs, **{k: v for k, v in options.items() if v is not None})
    if spec == "hf":
        from ascend_kernel_gym.agents.hf import HFPolicy

        if not options.get("model_path"):
            raise ValueError("--agent hf needs --model-path DIR")
        sampling = dict(options.pop("sampling", None) or {})
        if options.get("temperature") is not None:
            sampling["temperature"] = options.pop("temperature")
        if options.get("max_tokens") is not None:
            sampling["max_new_tokens"] = options.pop("max_tokens")
        model_path = options.pop("model_path")
        for key in ("endpoint", "model", "api_key_env", "temperature", "max_tokens"):
            options.pop(key, None)
        return HFPolicy(model_path, sampling=sampling or None, **{k: v for k, v in options.items() if v is not None})
    factory = _import_object(spec)
    if inspect.isclass(factory) and not issubclass(factory, Policy):
        raise ValueError(f"--agent {spec!r}: {factory.__name__} is not a subclass of ascend_kernel_gym Policy")
    if not callable(factory):
        raise ValueError(f"--agent {spec!r}: not a class or factory")
    return _construct(factory, options, tasks, spec)
