"""Plain-data records produced by rollout collection and consumed by the advantage estimators,
the loss and the trainer.

A rollout batch holds groups (one task each) of episodes; every episode is a list of turns
split into compaction segments; every segment of every episode is one training sample
(:class:`SegmentSample`). Nothing here imports torch.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class TurnRecord:
    """One policy turn of one episode.

    Attributes:
        index: turn index in the episode (0-based, summary turns included).
        segment: index of the compaction segment whose context the policy saw when it wrote this turn.
        is_summary: the turn wrote a compaction summary (not a kernel).
        reward: the environment's step reward for this turn.
        score: the kernel score of this turn (``info["score"]``), ``None`` for summary turns.
        correct: whether this turn's kernel passed correctness and was not a hack (``None`` if not evaluated).
        speedup: the measured speedup, when the backend measured one.
        text: the action text the policy wrote.
        span: ``(start, end)`` of this turn's policy tokens inside its sample's ``response_ids``
            (``(0, 0)`` when the policy gives no token ids).
        sample: index of the sample (in :attr:`RolloutBatch.samples`) holding this turn, or -1.
        truncated: the answer was cut at ``max_new_tokens`` (the generation ended without a stop token).
    """

    index: int
    segment: int
    is_summary: bool
    reward: float
    score: float | None = None
    correct: bool | None = None
    speedup: float | None = None
    text: str = ""
    span: tuple[int, int] = (0, 0)
    sample: int = -1
    truncated: bool = False


@dataclass
class SegmentSample:
    """One training sample: one segment of one episode.

    ``prompt_ids`` is the context at the segment's start rendered with the policy's chat template
    (generation prompt included). ``response_ids`` is everything after it: the policy's tokens of
    each turn (``loss_mask`` 1) with the environment's tokens between turns (``loss_mask`` 0), so
    ``prompt_ids + response_ids`` is exactly the token sequence the policy conditioned on when it
    wrote the segment's last turn, plus that turn.

    Attributes:
        group: index of the group (one task, G episodes) in the batch.
        episode: index of the episode in :attr:`RolloutBatch.episodes`.
        member: index of the episode inside its group (0..G-1).
        segment: compaction segment index within the episode.
        task_id: the task.
        prompt_ids: context tokens at the segment's start.
        response_ids: policy and environment tokens of the segment's turns.
        loss_mask: 1 for policy tokens, 0 for environment tokens; same length as ``response_ids``.
        summary_mask: 1 for tokens of summary-writing turns; same length as ``response_ids``.
        rollout_logprobs: log-probability of each response token under the sampling policy
            (0.0 on environment tokens); same length as ``response_ids``.
        turns: indices into the episode's :attr:`EpisodeRecord.turns` of the turns in this sample.
        overlong: the episode went over its compaction cap (the loss gives it zero weight).
        advantages: per-token advantages (filled by :func:`ascend_kernel_gym.agents.advantages.assign_advantages`).
    """

    group: int
    episode: int
    member: int
    segment: int
    task_id: str
    prompt_ids: list[int] = field(default_factory=list)
    response_ids: list[int] = field(default_factory=list)
    loss_mask: list[int] = field(default_factory=list)
    summary_mask: list[int] = field(default_factory=list)
    rollout_logprobs: list[float] = field(default_factory=list)
    turns: list[int] = field(default_factory=list)
    overlong: bool = False
    advantages: list[float] = field(default_factory=list)

    @property
    def num_policy_tokens(self) -> int:
        return int(sum(self.loss_mask))

    @property
    def length(self) -> int:
        return len(self.prompt_ids) + len(self.response_ids)

    def check(self) -> None:
        """Raise ``ValueError`` if the per-token lists disagree in length."""
        n = len(self.response_ids)
        for name in ("loss_mask", "summary_mask", "rollout_logprobs"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"SegmentSample.{name} has {len(getattr(self, name))} entries, response_ids has {n}")
        if self.advantages and len(self.advantages) != n:
            raise ValueError(f"SegmentSample.advantages has {len(self.advantages)} entries, response_ids has {n}")


@dataclass
class EpisodeRecord:
    """One episode of a group.

    Attributes:
        group: group index in the batch.
        member: index inside the group.
        task_id: the task.
        turns: the policy's turns in order.
        samples: indices of this episode's samples in :attr:`RolloutBatch.samples`.
        compactions: compactions performed in the episode.
        overlong: went over the compaction cap.
        terminated: the env ended it (e.g. target speedup reached).
        truncated: the env cut it (turn limit, compaction cap).
        best_score: best kernel score reached.
        best_correct: whether the best kernel was correct (and not a hack).
        best_speedup: the best correct kernel's speedup, when measured.
    """

    group: int
    member: int
    task_id: str
    turns: list[TurnRecord] = field(default_factory=list)
    samples: list[int] = field(default_factory=list)
    compactions: int = 0
    overlong: bool = False
    terminated: bool = False
    truncated: bool = False
    best_score: float | None = None
    best_correct: bool = False
    best_speedup: float | None = None

    @property
    def episode_return(self) -> float:
        return float(sum(turn.reward for turn in self.turns))

    @property
    def num_segments(self) -> int:
        return 1 + max((turn.segment for turn in self.turns), default=0)


@dataclass
class RolloutBatch:
    """Everything one call of :func:`~ascend_kernel_gym.agents.rollout.collect_rollouts` produced.

    Attributes:
        episodes: all episodes, group-major (group 0's G episodes first).
        samples: all segment samples, in episode order then segment order.
        group_size: G.
        stats: timing and token counts (``generation_s``, ``generated_tokens``, ``env_s``, ...).
    """

    episodes: list[EpisodeRecord] = field(default_factory=list)
    samples: list[SegmentSample] = field(default_factory=list)
    group_size: int = 1
    stats: dict[str, Any] = field(default_factory=dict)

    def groups(self) -> list[list[EpisodeRecord]]:
        """Episodes grouped by :attr:`EpisodeRecord.group`, each group ordered by member."""
        by_group: dict[int, list[EpisodeRecord]] = {}
        for episode in self.episodes:
            by_group.setdefault(episode.group, []).append(episode)
        return [sorted(by_group[g], key=lambda e: e.member) for g in sorted(by_group)]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable view (for run logs)."""
        return {
            "group_size": self.group_size,
            "stats": dict(self.stats),
            "episodes": [asdict(e) for e in self.episodes],
            "samples": [asdict(s) for s in self.samples],
        }
