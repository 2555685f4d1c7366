"""The policy interface shared by the trainer, the evaluation runner and the adapters.

A policy takes a batch of chat contexts (each a list of ``{"role", "content"}`` messages) and
returns one :class:`Generation` per context. Local models fill in token ids and log-probs (the
trainer needs them); HTTP and scripted policies may leave them empty. A
:class:`TaskAwarePolicy` is also told which task each context belongs to (the evaluation runner
does that).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

Message = dict[str, str]


@dataclass
class Generation:
    """One sampled answer.

    Attributes:
        text: the decoded answer (the env action).
        prompt_ids: token ids of the rendered prompt (empty when the policy has no tokenizer).
        token_ids: token ids of the answer.
        logprobs: per-token log-probabilities of ``token_ids`` under the sampling policy.
        meta: anything else (finish reason, latency, usage).
    """

    text: str
    prompt_ids: list[int] = field(default_factory=list)
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)


class Policy(ABC):
    """Messages in; text, token ids and log-probs out."""

    #: A short name for reports and submissions.
    name: str = "policy"

    @abstractmethod
    def generate(self, batch: Sequence[Sequence[Message]]) -> list[Generation]:
        """Answer every context in ``batch`` (same order)."""

    def describe(self) -> dict[str, Any]:
        """Metadata recorded in run files and leaderboard submissions."""
        return {"name": self.name, "class": f"{type(self).__module__}.{type(self).__qualname__}"}

    def reset(self) -> None:  # noqa: B027 - optional hook
        """Called at the start of each episode; stateful (scripted) policies override it."""


class TaskAwarePolicy(Policy):
    """A policy the runner also tells which task each context belongs to (scripted baselines).

    The runner calls :meth:`generate_for_tasks`; :meth:`generate` works without task ids by
    finding the task in the context (its id or its reference source).

    Args:
        tasks: the tasks it may be asked about (objects with ``id``, ``profiles`` and
            ``prompt_source(profile)``, e.g. :class:`~ascend_kernel_gym.tasks.task.Task`).
    """

    def __init__(self, tasks: Sequence[Any]) -> None:
        self.tasks = {task.id: task for task in tasks}

    def generate(self, batch: Sequence[Sequence[Message]]) -> list[Generation]:
        return self.generate_for_tasks(batch, [self.find_task(messages) for messages in batch])

    def generate_for_tasks(self, batch: Sequence[Sequence[Message]], task_ids: Sequence[str]) -> list[Generation]:
        """Answer every context in ``batch``; ``task_ids[i]`` is the task of ``batch[i]``."""
        if len(batch) != len(task_ids):
            raise ValueError(f"generate_for_tasks: {len(batch)} contexts but {len(task_ids)} task ids")
        return [self.answer(task_id, messages) for messages, task_id in zip(batch, task_ids, strict=True)]

    def answer(self, task_id: str, messages: Sequence[Message]) -> Generation:
        """The answer to one context of task ``task_id``."""
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
