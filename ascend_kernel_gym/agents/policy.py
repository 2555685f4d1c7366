"""The policy interface shared by the trainer, the evaluation runner and the adapters.

A policy takes a batch of chat contexts (each a list of ``{"role", "content"}`` messages) and
returns one :class:`Generation` per context. Local models fill in token ids and log-probs (the
trainer needs them); HTTP and scripted policies may leave them empty.
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
