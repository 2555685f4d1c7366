"""A kernel-choice wrapper: a small action space on top of the real env, for learning checks.

A tiny model cannot write Triton, but it can learn to pick the right one of a few prepared
kernels. :class:`KernelChoiceWrapper` turns a short answer into one of them and submits it to
the wrapped :class:`~ascend_kernel_gym.envs.ascend_triton.AscendTritonEnv`, so the evaluation,
the reward, the feedback, compaction and every other wrapper above it are the real ones.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, SupportsFloat

import gymnasium as gym

from ascend_kernel_gym.tasks.variants import broken_variant, fenced, hacky_variant


@dataclass(frozen=True)
class KernelChoice:
    """One prepared answer: a kind (``correct``, ``broken``, ``hacky``, ...) and its code."""

    kind: str
    code: str


def default_choices(task: Any) -> list[KernelChoice]:
    """The reference solution, a variant of it that fails at run time, and a known hack.

    The hack inherits the PyTorch reference (``class ModelNew(Model)``) next to a Triton kernel it
    never launches: the evaluator's anti-hack checks flag it.

    Raises:
        ValueError: the task has no bundled reference solution.
    """
    solution = task.solution_source()
    if solution is None:
        raise ValueError(f"task {task.id!r} has no reference solution: give choices= explicitly")
    return [
        KernelChoice("correct", solution),
        KernelChoice("broken", broken_variant(solution)),
        KernelChoice("hacky", hacky_variant(task.prompt_source("full"))),
    ]


class KernelChoiceWrapper(gym.Wrapper):
    """Answer with a letter; the wrapper submits the prepared kernel it stands for.

    ## Description

    For each task the wrapper prepares ``n`` answers (by default: the correct reference solution,
    a broken variant, a hack; see :func:`default_choices`), assigns them to labels ``A``, ``B``,
    ... in an order shuffled per task (seeded), and maps each action to one of them. The chosen
    kernel goes to the wrapped env as a fenced code block and is evaluated for real (repeated
    submissions of the same code hit the evaluator's result cache).

    ## Action Space

    Text. The first non-whitespace character selects: a label (case-insensitive) picks that
    answer; any other character ``c`` picks answer ``ord(c) % n``, so every non-empty answer
    selects a kernel and a random policy is right about ``1/n`` of the time. An empty answer is
    passed on as is (a format failure).

    ## Observation Space

    The wrapped env's Text space. The assistant messages hold the answers as written (not the
    submitted kernels). With ``short_prompt=True`` the system and task messages are replaced by
    short ones (``# Task <id>``, the description and the labels), and with ``short_feedback=True``
    each feedback message by a one-line result; both keep contexts small for tiny models. The
    env's real feedback (kept by default) makes the context grow by a few hundred tokens per
    turn, so a compaction budget of about a thousand tokens gives episodes of several segments.

    ## Rewards

    The wrapped env's rewards, unchanged.

    ## Episode End

    The wrapped env's, unchanged.

    ## Arguments

    * ``env``: an env whose ``unwrapped`` is an ``AscendTritonEnv`` (it needs ``task``,
      ``set_messages`` and ``render_observation``).
    * ``choices``: ``callable(task) -> list[KernelChoice]`` or ``{task_id: list[KernelChoice]}``;
      default :func:`default_choices`.
    * ``labels`` (str, ``"ABCDEFGH"``): labels, the first ``n`` are used.
    * ``seed`` (int, 0): seeds the per-task shuffle of answers to labels.
    * ``short_prompt`` (bool, True): replace the system and task messages by short ones.
    * ``short_feedback`` (bool, False): replace each feedback message by a one-line result.
    """

    def __init__(
        self,
        env: gym.Env,
        choices: Callable[[Any], Sequence[KernelChoice]] | Mapping[str, Sequence[KernelChoice]] | None = None,
        labels: str = "ABCDEFGH",
        seed: int = 0,
        short_prompt: bool = True,
        short_feedback: bool = False,
    ) -> None:
        super().__init__(env)
        for attr in ("set_messages", "render_observation"):
            if not hasattr(env.unwrapped, attr):
                raise TypeError(f"env.unwrapped has no {attr}(): wrap an AscendTritonEnv")
        if not labels or len(set(labels)) != len(labels):
            raise ValueError(f"labels must be distinct characters, got {labels!r}")
        self._choices_source = choices if choices is not None else default_choices
        self.labels = labels
        self.seed = seed
        self.short_prompt = short_prompt
        self.short_feedback = short_feedback
        self._cache: dict[str, list[KernelChoice]] = {}
        self.options: list[KernelChoice] = []

    # ------------------------------------------------------------------ helpers
    def options_for(self, task: Any) -> list[KernelChoice]:
        """The task's answers in label order (shuffled per task with ``seed``)."""
        if task.id not in self._cache:
            source = self._choices_source
            items = list(source[task.id]) if isinstance(source, Mapping) else list(source(task))
            if not items:
                raise ValueError(f"no choices for task {task.id!r}")
            if len(items) > len(self.labels):
                raise ValueError(f"{len(items)} choices for task {task.id!r} but only {len(self.labels)} labels")
            random.Random(f"{self.seed}:{task.id}").shuffle(items)
            self._cache[task.id] = items
        return self._cache[task.id]

    def parse(self, action: Any) -> int | None:
        """Index of the answer ``action`` selects, or ``None`` for an empty answer."""
        text = action if isinstance(action, str) else ("" if action is None else str(action))
        stripped = text.strip()
        if not stripped:
            return None
        first = stripped[0]
        labels = self.labels[: len(self.options)]
        if first.upper() in labels:
            return labels.index(first.upper())
        return ord(first) % len(self.options)

    def correct_label(self) -> str | None:
        """The label of the ``correct`` answer of the current task, if there is one."""
        for index, option in enumerate(self.options):
            if option.kind == "correct":
                return self.labels[index]
        return None

    def _short_messages(self, task: Any) -> list[dict[str, str]]:
        labels = ", ".join(self.labels[: len(self.options)])
        return [
            {"role": "system", "content": "Pick the kernel that solves the task."},
            {
                "role": "user",
                "content": f"# Task {task.id}\n{task.description}\nOptions: {labels}. Answer with one letter.",
            },
        ]

    # ------------------------------------------------------------------ Gymnasium API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(seed=seed, options=options)
        base = self.env.unwrapped
        task = base.task
        self.options = self.options_for(task)
        if self.short_prompt:
            base.set_messages(self._short_messages(task))
            obs = base.render_observation()
            info["messages"] = [dict(m) for m in base.messages]
        info["choice"] = {"labels": self.labels[: len(self.options)], "correct": self.correct_label()}
        return obs, info

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        index = self.parse(action)
        submitted = "" if index is None else fenced(self.options[index].code)
        obs, reward, terminated, truncated, info = self.env.step(submitted)
        label = None if index is None else self.labels[index]
        kind = None if index is None else self.options[index].kind
        base = self.env.unwrapped
        messages = [dict(m) for m in base.messages]
        messages[-2] = {"role": "assistant", "content": action if isinstance(action, str) else str(action or "")}
        if self.short_feedback:
            score = info.get("score")
            score_text = f"{score:.2f}" if isinstance(score, (int, float)) else "n/a"
            messages[-1] = {
                "role": "user",
                "content": f"Result of turn {info.get('turn')}: {label or 'no answer'} scored {score_text}.",
            }
        base.set_messages(messages)
        obs = base.render_observation()
        info["messages"] = messages
        info["choice"] = {"answer": label, "kind": kind, "correct": self.correct_label()}
        return obs, reward, terminated, truncated, info
