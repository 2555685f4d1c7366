"""Advantage estimators for segment-level GRPO.

All three estimators work on one *group*: the G episodes of one task. An episode is given as its
list of turns, each turn a ``(segment_index, reward)`` or ``(segment_index, reward, is_summary)``
tuple (``is_summary`` defaults to False). Each estimator returns one advantage per turn of every
episode; a training sample (one segment) then takes, for every token of a turn, that turn's
advantage (:func:`assign_advantages`).

**The clock counts kernel turns.** Summary turns (the policy writing a compaction summary) are not
kernel attempts: they do not advance the discount clock nor the turn index. With ``c_i(t)`` the
number of kernel turns of episode ``i`` before turn ``t``, the reward-to-go is

    ``G_i(t) = sum_{t' >= t} gamma^(c_i(t') - c_i(t)) r_i,t'``

so two episodes with the same kernel turns and rewards get the same values whether or not (and
wherever) a summary was written between them.

**A summary turn is credited only with what follows it.** Its value is ``G_i(t_summary)``, the
reward-to-go from the summary on, never the rewards of the kernel turns it summarises.

``trajectory`` (SUPO / ReSum broadcast)
    ``R_i = G_i(0)``; ``A_i = R_i - mean_j R_j`` (the mean over all G episodes, the episode itself
    included, as in GRPO); every turn of episode ``i`` gets ``A_i`` (summary turns too: this is the
    published methods' broadcast, kept as their baseline).

``segment`` (the default)
    A summary turn written in segment ``k`` *opens* segment ``k + 1``: segment ``k + 1`` starts at
    that summary turn (for credit), and its value is ``V_i(k+1) = G_i(t_summary)``, which is 0 if the
    episode ended right after the summary. A segment not opened by a summary (segment 0, or a
    compaction the policy did not write) starts at its first turn: ``V_i(k) = G_i(s_i(k))``.
    Baseline: the mean of ``V_j(k)`` over the *other* episodes ``j != i`` of the group that have a
    segment ``k`` (leave-one-out). When none has, the **pooled** baseline is used: the mean of
    ``V_j(k')`` over every segment ``k'`` of every other episode ``j != i`` (each segment one value;
    episode ``i``'s own segments are left out so the baseline does not depend on its actions).
    Kernel turns of segment ``k`` and the summary turn that opened it get ``V_i(k) - baseline``.

``turn`` (Dr. Kernel's TRLOO)
    Turn position = kernel-turn index ``c``. ``A_i,t = G_i(t) - mean_{j != i} K_j(c)`` where ``K_j(c)``
    is ``G_j`` at episode ``j``'s kernel turn number ``c`` (over the other episodes that have one); the
    same pooled fallback (every kernel turn of every other episode) when none has. A summary turn at
    position ``c`` (written after ``c`` kernel turns) is compared with the same baseline as the kernel
    turn ``c`` it precedes, so with its usual reward 0 it gets that kernel turn's advantage.

Standard-deviation normalisation (``normalize_std=True``) divides each advantage by
``std + eps``, where ``std`` is the population standard deviation (``ddof=0``) of the values
compared: for ``trajectory`` all ``R_j``; for a leave-one-out baseline the baseline values
together with the episode's own value; for a pooled baseline the pooled values together with the
episode's own value. A group of one episode has no baseline: every advantage is 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

from ascend_kernel_gym.agents.samples import RolloutBatch

ESTIMATORS = ("trajectory", "segment", "turn")

#: One turn as the estimators see it: ``(segment index, reward)`` or ``(segment index, reward, is_summary)``.
TurnReward = tuple[int, float] | tuple[int, float, bool]


class Turn(NamedTuple):
    """A turn normalised from a :data:`TurnReward` tuple."""

    segment: int
    reward: float
    is_summary: bool = False


def _turns(episode: Sequence[TurnReward]) -> list[Turn]:
    return [Turn(int(t[0]), float(t[1]), bool(t[2]) if len(t) > 2 else False) for t in episode]


def discounted_returns(
    rewards: Sequence[float], gamma: float = 1.0, is_summary: Sequence[bool] | None = None
) -> list[float]:
    """``G(t) = sum_{t' >= t} gamma^(c(t') - c(t)) r_t'`` for every ``t``, ``c`` counting kernel turns.

    Without ``is_summary`` every turn is a kernel turn and this is the plain discounted sum. A
    summary turn does not advance the clock: ``G(summary) = r_summary + G(next turn)``.
    """
    summary = list(is_summary) if is_summary is not None else [False] * len(rewards)
    if len(summary) != len(rewards):
        raise ValueError(f"is_summary has {len(summary)} entries, rewards has {len(rewards)}")
    out = [0.0] * len(rewards)
    running = 0.0
    for t in range(len(rewards) - 1, -1, -1):
        step = 1.0 if summary[t] else gamma
        running = float(rewards[t]) + step * running
        out[t] = running
    return out


def _returns(turns: Sequence[Turn], gamma: float) -> list[float]:
    return discounted_returns([t.reward for t in turns], gamma, [t.is_summary for t in turns])


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def _pstd(values: Sequence[float]) -> float:
    mu = _mean(values)
    return math.sqrt(sum((v - mu) ** 2 for v in values) / len(values))


def _loo(own: float, others: Sequence[float], normalize_std: bool, eps: float) -> float:
    """``own - mean(others)``, optionally divided by the std of ``others + [own]``."""
    adv = own - _mean(others)
    if normalize_std:
        adv /= _pstd([*others, own]) + eps
    return adv


def _baseline_advantage(
    own: float, same: Sequence[float], pooled: Sequence[float], normalize_std: bool, eps: float
) -> float:
    """Leave-one-out against ``same`` (values at the same position), else against ``pooled``, else 0."""
    others = same or pooled
    return _loo(own, others, normalize_std, eps) if others else 0.0


def _check(episodes: Sequence[Sequence[Turn]], gamma: float) -> None:
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must be in [0, 1], got {gamma}")
    for i, turns in enumerate(episodes):
        previous = 0
        for turn in turns:
            if turn.segment < previous:
                raise ValueError(
                    f"episode {i}: segment indices must not decrease (got {turn.segment} after {previous})"
                )
            previous = turn.segment


def trajectory_advantages(
    episodes: Sequence[Sequence[TurnReward]], *, gamma: float = 1.0, normalize_std: bool = False, eps: float = 1e-6
) -> list[list[float]]:
    """Group-normalised episode return, broadcast to every turn (SUPO / ReSum)."""
    parsed = [_turns(e) for e in episodes]
    _check(parsed, gamma)
    if len(parsed) < 2:
        return [[0.0] * len(turns) for turns in parsed]
    returns = [_returns(turns, gamma)[0] if turns else 0.0 for turns in parsed]
    mu = _mean(returns)
    scale = (_pstd(returns) + eps) if normalize_std else 1.0
    return [[(ret - mu) / scale] * len(turns) for ret, turns in zip(returns, parsed, strict=True)]


def credit_segments(turns: Sequence[TurnReward]) -> list[int]:
    """The segment each turn is credited to: its own, or for a summary turn the segment it opens (``k + 1``)."""
    return [t.segment + 1 if t.is_summary else t.segment for t in _turns(turns)]


def segment_values(turns: Sequence[TurnReward], gamma: float = 1.0) -> dict[int, float]:
    """``V(k)`` for every segment ``k`` of one episode: the reward-to-go from the turn that starts it for credit."""
    parsed = _turns(turns)
    rtg = _returns(parsed, gamma)
    values: dict[int, float] = {}
    for t, k in enumerate(credit_segments(parsed)):
        values.setdefault(k, rtg[t])
    return values


def segment_advantages(
    episodes: Sequence[Sequence[TurnReward]], *, gamma: float = 1.0, normalize_std: bool = False, eps: float = 1e-6
) -> list[list[float]]:
    """Reward-to-go from each segment's start, leave-one-out baseline by segment index (pooled fallback)."""
    parsed = [_turns(e) for e in episodes]
    _check(parsed, gamma)
    values = [segment_values(turns, gamma) for turns in parsed]
    out: list[list[float]] = []
    for i, turns in enumerate(parsed):
        others = [values[j] for j in range(len(parsed)) if j != i]
        pooled = [v for other in others for v in other.values()]
        adv = {
            k: _baseline_advantage(own, [o[k] for o in others if k in o], pooled, normalize_std, eps)
            for k, own in values[i].items()
        }
        out.append([adv[k] for k in credit_segments(turns)])
    return out


def _kernel_positions(turns: Sequence[Turn]) -> list[int]:
    """Kernel-turn index of each turn: the number of kernel turns before it."""
    positions, count = [], 0
    for turn in turns:
        positions.append(count)
        count += 0 if turn.is_summary else 1
    return positions


def turn_advantages(
    episodes: Sequence[Sequence[TurnReward]], *, gamma: float = 1.0, normalize_std: bool = False, eps: float = 1e-6
) -> list[list[float]]:
    """Per-turn reward-to-go, leave-one-out baseline by kernel-turn index (Dr. Kernel's TRLOO), pooled fallback."""
    parsed = [_turns(e) for e in episodes]
    _check(parsed, gamma)
    returns = [_returns(turns, gamma) for turns in parsed]
    positions = [_kernel_positions(turns) for turns in parsed]
    # kernel_values[j][c] = G_j at episode j's kernel turn number c
    kernel_values = [
        {c: g for turn, c, g in zip(turns, pos, rtg, strict=True) if not turn.is_summary}
        for turns, pos, rtg in zip(parsed, positions, returns, strict=True)
    ]
    out: list[list[float]] = []
    for i in range(len(parsed)):
        others = [kernel_values[j] for j in range(len(parsed)) if j != i]
        pooled = [v for other in others for v in other.values()]
        row = [
            _baseline_advantage(own, [o[c] for o in others if c in o], pooled, normalize_std, eps)
            for own, c in zip(returns[i], positions[i], strict=True)
        ]
        out.append(row)
    return out


_FUNCTIONS = {"trajectory": trajectory_advantages, "segment": segment_advantages, "turn": turn_advantages}


def group_advantages(
    episodes: Sequence[Sequence[TurnReward]],
    estimator: str = "segment",
    *,
    gamma: float = 1.0,
    normalize_std: bool = False,
    eps: float = 1e-6,
) -> list[list[float]]:
    """Per-turn advantages of one group with the named estimator (``trajectory``, ``segment``, ``turn``)."""
    if estimator not in _FUNCTIONS:
        raise ValueError(f"estimator must be one of {ESTIMATORS}, got {estimator!r}")
    return _FUNCTIONS[estimator](episodes, gamma=gamma, normalize_std=normalize_std, eps=eps)


def assign_advantages(
    batch: RolloutBatch,
    estimator: str = "segment",
    *,
    gamma: float = 1.0,
    normalize_std: bool = False,
    eps: float = 1e-6,
    truncation_penalty: float = 0.0,
) -> list[list[float]]:
    """Compute per-turn advantages for every group of ``batch`` and write per-token advantages into its samples.

    Every token of a turn's span gets the turn's advantage; environment tokens get 0 (they are masked
    out of the loss anyway).

    Args:
        batch: the rollouts.
        estimator: ``trajectory``, ``segment`` or ``turn``.
        gamma: discount per kernel turn.
        normalize_std: divide by the std of the compared values.
        eps: added to the std.
        truncation_penalty: subtracted from the reward of every turn whose answer was cut at
            ``max_new_tokens`` (:attr:`TurnRecord.truncated`) before the estimator runs.

    Returns:
        Per-turn advantages, one list per episode of ``batch.episodes`` (same order).
    """
    per_episode: dict[int, list[float]] = {}
    index_of = {id(e): n for n, e in enumerate(batch.episodes)}
    for group in batch.groups():
        turns = [
            [(t.segment, t.reward - (truncation_penalty if t.truncated else 0.0), t.is_summary) for t in episode.turns]
            for episode in group
        ]
        advantages = group_advantages(turns, estimator, gamma=gamma, normalize_std=normalize_std, eps=eps)
        for episode, adv in zip(group, advantages, strict=True):
            per_episode[index_of[id(episode)]] = adv
    for sample in batch.samples:
        sample.advantages = [0.0] * len(sample.response_ids)
    for n, episode in enumerate(batch.episodes):
        for turn, adv in zip(episode.turns, per_episode[n], strict=True):
            if turn.sample < 0:
                continue
            sample = batch.samples[turn.sample]
            start, end = turn.span
            sample.advantages[start:end] = [adv] * (end - start)
    return [per_episode[n] for n in range(len(batch.episodes))]
