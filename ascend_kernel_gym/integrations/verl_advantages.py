"""The segment / turn / trajectory advantage estimators over veRL batches, registered with veRL.

The math is :mod:`ascend_kernel_gym.agents.advantages` (docs/segment_grpo.md): every estimator
works on the G episodes of one prompt (veRL's ``uid``) and gives one advantage per turn; each
policy token of the turn gets it. A veRL batch row is one compaction segment written by
:class:`~ascend_kernel_gym.integrations.verl_agent_loop.AscendTritonAgentLoop`; the episode
structure comes from the row's ``akg_*`` extra fields (``non_tensor_batch`` columns):

* ``akg_episode``: the episode the row belongs to (rows of one episode share it);
* ``akg_episode_turns``: ``[segment, reward]`` of every turn of that episode, in order;
* ``akg_turns``: the row's own turns, each with its episode-wide ``index`` and the ``span``
  ``[start, end)`` of its policy tokens in the row's response.

Registered names (``algorithm.adv_estimator``): ``akg_segment``, ``akg_turn``, ``akg_trajectory``.
veRL calls an estimator with ``token_level_rewards``, ``response_mask``, ``index`` (the uids)
and ``config`` (``algorithm``: ``gamma``, and ``norm_adv_by_std_in_grpo`` for the
standard-deviation normalisation); the episode structure has to come in as ``non_tensor_batch``
(veRL 0.9's ``compute_advantage`` forwards it to the ``gdpo`` estimator only, so a trainer calls
:func:`compute_advantages` on its batch, or passes ``non_tensor_batch=batch.non_tensor_batch``).

Nothing here imports veRL at import time; torch is imported by the functions that return tensors.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ascend_kernel_gym.agents.advantages import ESTIMATORS, group_advantages

__all__ = [
    "REQUIRED_COLUMNS",
    "VERL_ESTIMATORS",
    "compute_advantages",
    "register_verl_estimators",
    "row_turn_advantages",
    "token_advantages",
]

#: veRL estimator name -> the package estimator it runs.
VERL_ESTIMATORS: dict[str, str] = {"akg_segment": "segment", "akg_turn": "turn", "akg_trajectory": "trajectory"}

#: The ``non_tensor_batch`` columns the estimators read (written by the agent loop's ``extra_fields``).
REQUIRED_COLUMNS = ("akg_episode", "akg_episode_turns", "akg_turns")


def _turn_pairs(value: Any) -> list[tuple[int, float]]:
    return [(int(segment), float(reward)) for segment, reward in value]


def row_turn_advantages(
    index: Sequence[Any],
    episodes: Sequence[Any],
    row_turns: Sequence[Sequence[Mapping[str, Any]]],
    episode_turns: Sequence[Sequence[Sequence[float]]],
    estimator: str = "segment",
    *,
    gamma: float = 1.0,
    normalize_std: bool = False,
    eps: float = 1e-6,
) -> list[list[float]]:
    """The advantage of every turn of every row.

    Args:
        index: the group (prompt uid) of each row.
        episodes: the episode key of each row.
        row_turns: each row's turns (mappings with the episode-wide turn ``index``).
        episode_turns: for each row, ``[segment, reward]`` of every turn of its episode.
        estimator: ``segment``, ``turn`` or ``trajectory``.
        gamma: discount per turn.
        normalize_std: divide by the standard deviation of the compared values.
        eps: added to that standard deviation.

    Returns:
        One list per row: the advantage of each of its turns, in ``row_turns`` order.

    Raises:
        ValueError: an unknown estimator, lengths that disagree, rows of one episode that
            disagree on its turns, or a turn index outside its episode.
    """
    if estimator not in ESTIMATORS:
        raise ValueError(f"estimator must be one of {ESTIMATORS}, got {estimator!r}")
    n = len(index)
    if not (len(episodes) == len(row_turns) == len(episode_turns) == n):
        raise ValueError("index, episodes, row_turns and episode_turns must have one entry per row")
    groups: dict[Any, dict[Any, list[tuple[int, float]]]] = {}
    for r in range(n):
        turns = _turn_pairs(episode_turns[r])
        known = groups.setdefault(index[r], {}).setdefault(episodes[r], turns)
        if known != turns:
            raise ValueError(f"rows of episode {episodes[r]!r} disagree on its turns")
    per_episode: dict[tuple[Any, Any], list[float]] = {}
    for uid, members in groups.items():
        keys = list(members)
        advantages = group_advantages(
            [members[k] for k in keys], estimator, gamma=gamma, normalize_std=normalize_std, eps=eps
        )
        for key, adv in zip(keys, advantages, strict=True):
            per_episode[(uid, key)] = adv
    out: list[list[float]] = []
    for r in range(n):
        adv = per_episode[(index[r], episodes[r])]
        row: list[float] = []
        for turn in row_turns[r]:
            t = int(turn["index"])
            if not 0 <= t < len(adv):
                raise ValueError(f"row {r}: turn {t} is outside its episode of {len(adv)} turns")
            row.append(adv[t])
        out.append(row)
    return out


def token_advantages(response_mask: Any, row_turns: Sequence[Sequence[Mapping[str, Any]]], turn_advantages: Any) -> Any:
    """Per-token advantages ``[rows, response_length]``: each turn's advantage on its span, times the mask."""
    import torch

    mask = torch.as_tensor(response_mask)
    out = torch.zeros(mask.shape, dtype=torch.float32)
    width = mask.shape[1]
    for r, (turns, advantages) in enumerate(zip(row_turns, turn_advantages, strict=True)):
        for turn, value in zip(turns, advantages, strict=True):
            start, end = (min(max(int(x), 0), width) for x in turn["span"])
            out[r, start:end] = float(value)
    return out * mask.to(out.dtype)


def _columns(non_tensor_batch: Mapping[str, Any] | None) -> tuple[Any, Any, Any]:
    missing = [c for c in REQUIRED_COLUMNS if non_tensor_batch is None or c not in non_tensor_batch]
    if missing:
        raise ValueError(
            f"the akg_* advantage estimators need the episode structure in non_tensor_batch (missing {missing}); "
            "run AscendTritonAgentLoop and pass non_tensor_batch=batch.non_tensor_batch, or call "
            "ascend_kernel_gym.integrations.verl_advantages.compute_advantages(batch)"
        )
    assert non_tensor_batch is not None
    return (
        list(non_tensor_batch["akg_episode"]),
        list(non_tensor_batch["akg_turns"]),
        list(non_tensor_batch["akg_episode_turns"]),
    )


def _config_value(config: Any, name: str, default: Any) -> Any:
    if config is None:
        return default
    if isinstance(config, Mapping) or hasattr(config, "get"):
        try:
            value = config.get(name, default)
        except (TypeError, AttributeError):  # a dataclass config without a dict-style get
            value = getattr(config, name, default)
    else:
        value = getattr(config, name, default)
    return default if value is None else value


def _estimate(
    estimator: str,
    response_mask: Any,
    index: Sequence[Any],
    non_tensor_batch: Mapping[str, Any] | None,
    gamma: float,
    normalize_std: bool,
    eps: float,
) -> tuple[Any, Any]:
    episodes, row_turns, episode_turns = _columns(non_tensor_batch)
    per_turn = row_turn_advantages(
        list(index), episodes, row_turns, episode_turns, estimator, gamma=gamma, normalize_std=normalize_std, eps=eps
    )
    advantages = token_advantages(response_mask, row_turns, per_turn)
    return advantages, advantages.clone()


def compute_advantages(
    data: Any,
    estimator: str = "segment",
    *,
    gamma: float = 1.0,
    normalize_std: bool = False,
    eps: float = 1e-6,
    index_key: str = "uid",
) -> Any:
    """Write ``advantages`` and ``returns`` into a veRL ``DataProto`` of AscendTriton agent-loop rows.

    Args:
        data: the batch (``batch["response_mask"]``, ``non_tensor_batch[index_key]`` and the ``akg_*`` columns).
        estimator: ``segment``, ``turn`` or ``trajectory``.
        gamma: discount per turn.
        normalize_std: divide by the standard deviation of the compared values.
        eps: added to that standard deviation.
        index_key: the ``non_tensor_batch`` column that names each row's group.

    Returns:
        ``data``, with ``batch["advantages"]`` and ``batch["returns"]`` set.
    """
    if index_key not in data.non_tensor_batch:
        raise ValueError(f"the batch has no {index_key!r} column to group rollouts by")
    advantages, returns = _estimate(
        estimator,
        data.batch["response_mask"],
        list(data.non_tensor_batch[index_key]),
        data.non_tensor_batch,
        gamma,
        normalize_std,
        eps,
    )
    device = data.batch["response_mask"].device
    data.batch["advantages"] = advantages.to(device)
    data.batch["returns"] = returns.to(device)
    return data


def _verl_estimator(estimator: str) -> Any:
    def estimate(
        token_level_rewards: Any,
        response_mask: Any,
        index: Any = None,
        config: Any = None,
        non_tensor_batch: Mapping[str, Any] | None = None,
        **_: Any,
    ) -> tuple[Any, Any]:
        if index is None:
            raise ValueError("the akg_* advantage estimators need index (the prompt uid of each row)")
        advantages, returns = _estimate(
            estimator,
            response_mask,
            list(index),
            non_tensor_batch,
            float(_config_value(config, "gamma", 1.0)),
            bool(_config_value(config, "norm_adv_by_std_in_grpo", False)),
            1e-6,
        )
        device = response_mask.device
        return advantages.to(device), returns.to(device)

    estimate.__name__ = f"akg_{estimator}_advantage"
    estimate.__doc__ = f"The package's ``{estimator}`` estimator over AscendTriton agent-loop rows (veRL signature)."
    estimate.akg_estimator = estimator  # type: ignore[attr-defined]
    return estimate


def register_verl_estimators() -> dict[str, Any]:
    """Register ``akg_segment``, ``akg_turn`` and ``akg_trajectory`` in veRL's estimator registry.

    Idempotent: a name already registered by this function (e.g. by an earlier import) is replaced.

    Returns:
        The registered functions by name.
    """
    from verl.trainer.ppo import core_algos

    registered = {}
    for name, estimator in VERL_ESTIMATORS.items():
        fn = _verl_estimator(estimator)
        existing = core_algos.ADV_ESTIMATOR_REGISTRY.get(name)
        if existing is not None and getattr(existing, "akg_estimator", None) is not None:
            core_algos.ADV_ESTIMATOR_REGISTRY[name] = fn
        else:
            core_algos.register_adv_est(name)(fn)
        registered[name] = fn
    return registered
