"""Advantage estimators for segment-level GRPO.

All three estimators work on one *group*: the G episodes of one task. An episode is given as its
list of turns, each turn a ``(segment_index, reward)`` pair. Each estimator returns one advantage
per turn of every episode; a training sample (one segment) then takes, for every token of a turn,
that turn's advantage (:func:`assign_advantages`).

Notation: episode ``i`` has rewards ``r_i,0 .. r_i,T_i-1``; the discounted reward-to-go from turn
``t`` is ``G_i(t) = sum_{t' >= t} gamma^(t'-t) r_i,t'``; segment ``k`` of episode ``i`` starts at
turn ``s_i(k)``.

``trajectory`` (SUPO / ReSum broadcast)
    ``R_i = G_i(0)``; ``A_i = R_i - mean_j R_j`` (the mean over all G episodes, the episode itself
    included, as in GRPO); every turn of episode ``i`` gets ``A_i``.

``segment`` (the default)
    ``V_i(k) = G_i(s_i(k))``, the reward-to-go from the segment's first turn. Baseline: the mean of
    ``V_j(k)`` over the *other* episodes ``j != i`` of the group that reached segment ``k``
    (leave-one-out). When no other episode reached segment ``k``, the **pooled** baseline is used:
    the mean of ``V_j(k')`` over every segment ``k'`` of every other episode ``j != i`` (all segment
    indices, each segment one value). It excludes episode ``i``'s own segments so that the baseline
    does not depend on episode ``i``'s actions. Every turn of segment ``k`` gets ``V_i(k) - baseline``.

``turn`` (Dr. Kernel's TRLOO)
    ``A_i,t = G_i(t) - mean_{j != i} G_j(t)`` over the other episodes that have a turn ``t``; the
    same pooled fallback (every turn of every other episode) when none has.

Standard-deviation normalisation (``normalize_std=True``) divides each advantage by
``std + eps``, where ``std`` is the population standard deviation (``ddof=0``) of the values
compared: for ``trajectory`` all ``R_j``; for a leave-one-out baseline the baseline values
together with the episode's own value; for a pooled baseline the pooled values together with the
episode's own value. A group of one episode has no baseline: every advantage is 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ascend_kernel_gym.agents.samples import RolloutBatch

ESTIMATORS = ("trajectory", "segment", "turn")

#: One turn as the estimators see it: (segment index, reward).
TurnReward = tuple[int, float]


def discounted_returns(rewards: Sequence[float], gamma: float = 1.0) -> list[float]:
    """``G(t) = sum_{t' >= t} gamma^(t'-t) r_t'`` for every ``t``."""
    out = [0.0] * len(rewards)
    running = 0.0
    for t in range(len(rewards) - 1, -1, -1):
        running = float(rewards[t]) + gamma * running
        out[t] = running
    return out


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


def _check(episodes: Sequence[Sequence[TurnReward]], gamma: float) -> None:
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must be in [0, 1], got {gamma}")
    for i, turns in enumerate(episodes):
        previous = 0
        for segment, _reward in turns:
            if segment < previous:
                raise ValueError(f"episode {i}: segment indices must not decrease (got {segment} after {previous})")
            previous = segment


def trajectory_advantages(
    episodes: Sequence[Sequence[TurnReward]], *, gamma: float = 1.0, normalize_std: bool = False, eps: float = 1e-6
) -> list[list[float]]:
    """Group-normalised episode return, broadcast to every turn (SUPO / ReSum)."""
    _check(episodes, gamma)
    if len(episodes) < 2:
        return [[0.0] * len(turns) for turns in episodes]
    returns = [discounted_returns([r for _, r in turns], gamma)[0] if turns else 0.0 for turns in episodes]
    mu = _mean(returns)
    scale = (_pstd(returns) + eps) if normalize_std else 1.0
    return [[(ret - mu) / scale] * len(turns) for ret, turns in zip(returns, episodes, strict=True)]


def segment_advantages(
    episodes: Sequence[Sequence[TurnReward]], *, gamma: float = 1.0, normalize_std: bool = False, eps: float = 1e-6
) -> list[list[float]]:
    """Reward-to-go from each segment's start, leave-one-out baseline by segment index (pooled fallback)."""
    _check(episodes, gamma)
    # values[i][k] = V_i(k): reward-to-go from the first turn of segment k of episode i.
    values: list[dict[int, float]] = []
    for turns in episodes:
        rtg = discounted_returns([r for _, r in turns], gamma)
        first: dict[int, float] = {}
        for t, (segment, _) in enumerate(turns):
            first.setdefault(segment, rtg[t])
        values.append(first)
    out: list[list[float]] = []
    for i, turns in enumerate(episodes):
        seg_adv: dict[int, float] = {}
        for k, own in values[i].items():
            same = [values[j][k] for j in range(len(episodes)) if j != i and k in values[j]]
            if not same:
                same = [v for j in range(len(episodes)) if j != i for v in values[j].values()]
            seg_adv[k] = _loo(own, same, normalize_std, eps) if same else 0.0
        out.append([seg_adv[segment] for segment, _ in turns])
    return out


def turn_advantages(
    episodes: Sequence[Sequence[TurnReward]], *, gamma: float = 1.0, normalize_std: bool = False, eps: float = 1e-6
) -> list[list[float]]:
    """Per-turn reward-to-go, leave-one-out baseline by turn index (Dr. Kernel's TRLOO), pooled fallback."""
    _check(episodes, gamma)
    returns = [discounted_returns([r for _, r in turns], gamma) for turns in episodes]
    out: list[list[float]] = []
    for i, own_returns in enumerate(returns):
        row: list[float] = []
        for t, own in enumerate(own_returns):
            same = [returns[j][t] for j in range(len(episodes)) if j != i and t < len(returns[j])]
            if not same:
                same = [v for j in range(len(episodes)) if j != i for v in returns[j]]
            row.append(_loo(own, same, normalize_std, eps) if same else 0.0)
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
) -> list[list[float]]:
    """Compute per-turn advantages for every group of ``batch`` and write per-token advantages into its samples.

    Every token of a turn's span gets the turn's advantage; environment tokens get 0 (they are masked
    out of the loss anyway).

    Returns:
        Per-turn advantages, one list per episode of ``batch.episodes`` (same order).
    """
    per_episode: dict[int, list[float]] = {}
    index_of = {id(e): n for n, e in enumerate(batch.episodes)}
    for group in batch.groups():
        turns = [[(t.segment, t.reward) for t in episode.turns] for episode in group]
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
