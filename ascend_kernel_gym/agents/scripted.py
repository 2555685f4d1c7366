"""Scripted policies for tests, examples and baselines.

- :class:`ScriptedPolicy` answers from a fixed list, by turn.
- :class:`ReferencePolicy` submits the task's bundled reference solution, optionally after a
  number of deliberately broken attempts (also the ``reference`` agent of ``akg eval``).
- :class:`ChoicePolicy` answers a label (``A``, ``B``, ...) for the kernel-choice env of
  :mod:`ascend_kernel_gym.wrappers.choice`, at random with given probabilities or from a list.

These policies are stateless across a batch: the turn number of a context is read from the
context itself (:func:`turns_so_far`), so one policy object can serve many episodes at once.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from typing import Any

from ascend_kernel_gym.agents.policy import Generation, Message, Policy, TaskAwarePolicy
from ascend_kernel_gym.tasks.variants import broken_variant, fenced

_TASK_ID_RE = re.compile(r"^#\s*Task\s+(\S+)", re.MULTILINE)
_TURN_RE = re.compile(r"Result of turn (\d+)")
_TOTAL_RE = re.compile(r"You have (\d+) turn\(s\)\.")
_LEFT_RE = re.compile(r"You have (\d+) turn\(s\) left")


def turns_so_far(messages: Sequence[Message]) -> int:
    """Kernel turns already taken in the episode of this context.

    The largest of: the number of assistant messages; the highest ``Result of turn N`` the feedback
    mentions; and, when the task prompt says ``You have T turn(s).`` and the latest user message
    ``You have L turn(s) left``, ``T - L`` (which survives compaction: the wrapper's summary message
    ends with the turns left).
    """
    assistant = sum(1 for m in messages if m.get("role") == "assistant")
    user_texts = [m.get("content", "") for m in messages if m.get("role") == "user"]
    mentioned = [int(n) for text in user_texts for n in _TURN_RE.findall(text)]
    from_budget: list[int] = []
    total = next((int(m.group(1)) for text in user_texts if (m := _TOTAL_RE.search(text))), None)
    left = [int(n) for n in _LEFT_RE.findall(user_texts[-1])] if user_texts else []
    if total is not None and left:
        from_budget.append(max(0, total - left[-1]))
    return max([assistant, *mentioned, *from_budget])


def task_id_from_messages(messages: Sequence[Message]) -> str | None:
    """The task id from the env's task prompt (``# Task <id> ...``), or ``None``."""
    for message in messages:
        if message.get("role") in ("user", "system"):
            match = _TASK_ID_RE.search(message.get("content", ""))
            if match:
                return match.group(1)
    return None


class ScriptedPolicy(Policy):
    """Answers ``answers[k]`` on the k-th turn of an episode (the last answer once the list runs out).

    Args:
        answers: the answers, in turn order.
        name: the name in reports.
    """

    def __init__(self, answers: Sequence[str], name: str = "scripted") -> None:
        if not answers:
            raise ValueError("answers must hold at least one answer")
        self.answers = [str(a) for a in answers]
        self.name = name

    def generate(self, batch: Sequence[Sequence[Message]]) -> list[Generation]:
        out = []
        for messages in batch:
            turn = turns_so_far(messages)
            out.append(Generation(text=self.answers[min(turn, len(self.answers) - 1)], meta={"turn": turn}))
        return out


class ReferencePolicy(TaskAwarePolicy):
    """Submits each task's bundled reference solution, after ``broken_attempts`` broken ones.

    A baseline and a harness check (``akg eval --agent reference``: on a healthy install every
    task with a solution is correct), and a scripted policy for rollout tests.

    Which task a context is about: the evaluation runner names it (:meth:`generate_for_tasks`);
    otherwise ``task_resolver(messages)`` when given, else the env's task prompt line
    ``# Task <id>``, else the first of ``tasks`` whose id or reference source appears in the
    context. Ids are looked up in ``tasks`` first, then among the bundled suites (``get_task``).

    Args:
        tasks: tasks to resolve ids against (e.g. tasks loaded from files); each must ship a
            reference solution.
        broken_attempts: how many turns answer a broken variant of the solution first.
        task_resolver: a callable ``messages -> Task`` that overrides the lookup from the context.
        name: the name in reports.

    Raises:
        ValueError: a negative ``broken_attempts``, or a task in ``tasks`` without a reference solution.
    """

    name = "reference"
    #: Answers are instant: no point waiting for a generation batch to fill up.
    batch_wait_s = 0.0

    def __init__(
        self,
        tasks: Sequence[Any] | None = None,
        broken_attempts: int = 0,
        task_resolver: Callable[[Sequence[Message]], Any] | None = None,
        name: str = "reference",
    ) -> None:
        if broken_attempts < 0:
            raise ValueError(f"broken_attempts must be >= 0, got {broken_attempts}")
        super().__init__(tasks or ())
        missing = [task_id for task_id, task in self.tasks.items() if task.solution_path is None]
        if missing:
            raise ValueError(f"reference agent: no bundled reference solution for {missing}")
        self.broken_attempts = broken_attempts
        self.task_resolver = task_resolver
        self.name = name
        self.calls = 0

    def describe(self) -> dict[str, Any]:
        return {
            **super().describe(),
            "kind": "scripted",
            "description": "bundled reference solutions",
            "broken_attempts": self.broken_attempts,
        }

    def generate(self, batch: Sequence[Sequence[Message]]) -> list[Generation]:
        return [self._answer_task(self._task_of(messages), messages) for messages in batch]

    def answer(self, task_id: str, messages: Sequence[Message]) -> Generation:
        return self._answer_task(self._lookup(task_id), messages)

    def _lookup(self, task_id: str) -> Any:
        if task_id in self.tasks:
            return self.tasks[task_id]
        from ascend_kernel_gym.tasks.suite import get_task

        return get_task(task_id)

    def _task_of(self, messages: Sequence[Message]) -> Any:
        if self.task_resolver is not None:
            return self.task_resolver(messages)
        task_id = task_id_from_messages(messages)
        if task_id is None:
            if not self.tasks:
                raise ValueError(
                    "ReferencePolicy: cannot tell which task this context is about (no '# Task <id>' line); "
                    "pass tasks= or task_resolver="
                )
            task_id = self.find_task(messages)
        return self._lookup(task_id)

    def _answer_task(self, task: Any, messages: Sequence[Message]) -> Generation:
        self.calls += 1
        solution = task.solution_source()
        if solution is None:
            return Generation(text="I have no reference solution for this task.", meta={"task_id": task.id})
        turn = turns_so_far(messages)
        code = broken_variant(solution) if turn < self.broken_attempts else solution
        meta = {"task_id": task.id, "turn": turn, "source": "bundled reference solution"}
        return Generation(text=fenced(code), meta=meta)


class ChoicePolicy(Policy):
    """Answers a label for the kernel-choice env: random with ``probs``, or ``sequence[turn]``.

    Args:
        labels: the labels to answer (default ``"ABC"``).
        probs: probability of each label (default uniform); ignored when ``sequence`` is given.
        sequence: fixed labels by turn (the last one repeats).
        seed: seed of the random choices.
    """

    def __init__(
        self,
        labels: Sequence[str] = "ABC",
        probs: Sequence[float] | None = None,
        sequence: Sequence[str] | None = None,
        seed: int = 0,
        name: str = "choice",
    ) -> None:
        self.labels = list(labels)
        if not self.labels:
            raise ValueError("labels must not be empty")
        if probs is not None and (len(probs) != len(self.labels) or min(probs) < 0 or sum(probs) <= 0):
            raise ValueError(f"probs must be {len(self.labels)} non-negative weights, got {probs}")
        self.probs = list(probs) if probs is not None else [1.0] * len(self.labels)
        self.sequence = list(sequence) if sequence else None
        self.rng = random.Random(seed)
        self.name = name

    def generate(self, batch: Sequence[Sequence[Message]]) -> list[Generation]:
        out = []
        for messages in batch:
            if self.sequence is not None:
                turn = turns_so_far(messages)
                label = self.sequence[min(turn, len(self.sequence) - 1)]
            else:
                label = self.rng.choices(self.labels, weights=self.probs)[0]
            out.append(Generation(text=label))
        return out
