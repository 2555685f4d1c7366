"""The segment-GRPO policy loss: a token-level clipped surrogate with asymmetric clipping.

For a token ``t`` of sample ``s`` with weight ``w_s,t`` (1 for a trainable policy token of a
kept, non-overlong sample, else 0), advantage ``A_s,t``, ratio ``rho = exp(logp - logp_old)``, the
per-token term is

``l_s,t = -min(rho A, clip(rho, 1 - eps_low, 1 + eps_high) A) + beta * kl_s,t``

and the loss aggregates it over the mini-batch in one of three ways (:data:`AGGREGATIONS`):

* ``token_mean`` (DAPO, FoldGRPO; the default): ``L = sum_{s,t} w l / N`` with ``N = sum w`` over the
  whole mini-batch (not per sample, not per micro-batch): every token weighs the same.
* ``sequence_mean`` (the original GRPO): ``L = (1/S) sum_s (sum_t w l / n_s)`` with ``n_s = sum_t w_s,t``
  and ``S`` the number of samples of the mini-batch with ``n_s > 0``: every sample weighs the same,
  so a token of a long sample weighs less.
* ``constant`` (Dr. GRPO): ``L = sum_{s,t} w l / (M * C)`` with ``M`` the number of samples in the
  mini-batch and ``C`` a constant (the trainer uses ``max_new_tokens``): no length normalisation.

**KL term.** ``d = logp_ref - logp`` on tokens sampled from the rollout policy. ``k3 = exp(d) - d - 1``
(default) is non-negative and, on-policy, an unbiased estimate of the *value* of KL(pi || pi_ref);
but as a loss term differentiated through ``logp`` only, its expected gradient
``E_pi[(1 - pi_ref/pi) grad log pi]`` is the gradient of the *other* direction, KL(pi_ref || pi)
(the mass-covering one). ``k2 = d^2 / 2`` has expected gradient ``E_pi[-d grad log pi]``, the
gradient of KL(pi || pi_ref), at the price of a biased value estimate. Both are off-policy after
the first optimizer step on a batch (tokens come from ``pi_old``). Imports torch: import this
module only where training happens.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

#: Loss aggregations (see the module docstring).
AGGREGATIONS = ("token_mean", "sequence_mean", "constant")
#: KL estimators for the penalty term.
KL_ESTIMATORS = ("k3", "k2")


@dataclass
class LossOutput:
    """The loss of one micro-batch and the sums needed to aggregate statistics over micro-batches.

    Attributes:
        loss: the micro-batch's share of the batch loss (already divided by the batch's ``N``).
        tokens: number of weighted (trainable) tokens in this micro-batch.
        clipped: tokens whose gradient was cut by the clip (the clipped branch was the minimum).
        kl_sum: sum of the k3 estimate over weighted tokens (0 without a reference).
        ratio_sum: sum of the ratios over weighted tokens.
        policy_loss_sum: sum of the per-token surrogate term (without KL) over weighted tokens.
    """

    loss: torch.Tensor
    tokens: float
    clipped: float
    kl_sum: float
    ratio_sum: float
    policy_loss_sum: float


def _row_logprobs(row_logits: torch.Tensor, row_targets: torch.Tensor) -> torch.Tensor:
    row_logits = row_logits.float()
    picked = row_logits.gather(-1, row_targets.unsqueeze(-1)).squeeze(-1)
    return picked - torch.logsumexp(row_logits, dim=-1)


def selective_log_softmax(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """``log_softmax(logits)[..., targets]`` in float32 without keeping a float32 copy of the logits.

    One row at a time; when gradients are needed each row runs under activation checkpointing, so
    autograd keeps only the (bf16) logits it was given and recomputes the row's float32 copy in the
    backward pass: a ``[T, V]`` float32 copy per row (0.3 GB for 512 tokens of a 152k vocabulary)
    would otherwise stay alive for every row of the micro-batch until the backward pass.

    Args:
        logits: ``[B, T, V]`` (any float dtype).
        targets: ``[B, T]`` token ids.

    Returns:
        ``[B, T]`` float32 log-probabilities.
    """
    from torch.utils.checkpoint import checkpoint

    recompute = torch.is_grad_enabled() and logits.requires_grad
    rows = []
    for row_logits, row_targets in zip(logits, targets, strict=True):
        if recompute:
            rows.append(checkpoint(_row_logprobs, row_logits, row_targets, use_reentrant=False))
        else:
            rows.append(_row_logprobs(row_logits, row_targets))
    return torch.stack(rows)


def k3_kl(logprobs: torch.Tensor, ref_logprobs: torch.Tensor) -> torch.Tensor:
    """Per-token k3 ``exp(d) - d - 1``, ``d = logp_ref - logp``.

    Its value estimates KL(pi || pi_ref) on tokens sampled from pi; its gradient as a loss is that of
    KL(pi_ref || pi) (module docstring).
    """
    delta = (ref_logprobs - logprobs).clamp(-20.0, 20.0)
    return torch.exp(delta) - delta - 1.0


def k2_kl(logprobs: torch.Tensor, ref_logprobs: torch.Tensor) -> torch.Tensor:
    """Per-token k2 ``d^2 / 2``, ``d = logp_ref - logp``: its gradient as a loss is that of KL(pi || pi_ref)."""
    delta = (ref_logprobs - logprobs).clamp(-20.0, 20.0)
    return 0.5 * delta * delta


def kl_penalty(logprobs: torch.Tensor, ref_logprobs: torch.Tensor, estimator: str = "k3") -> torch.Tensor:
    """Per-token KL penalty with the named estimator (``k3`` or ``k2``)."""
    if estimator == "k3":
        return k3_kl(logprobs, ref_logprobs)
    if estimator == "k2":
        return k2_kl(logprobs, ref_logprobs)
    raise ValueError(f"estimator must be one of {KL_ESTIMATORS}, got {estimator!r}")


def mismatch_keep(
    train_logprobs: torch.Tensor, rollout_logprobs: torch.Tensor, mask: torch.Tensor, eps: float
) -> torch.Tensor:
    """Which samples to keep under train/rollout mismatch rejection.

    The geometric mean over a sample's trainable tokens of ``p_train / p_rollout`` is
    ``exp(mean(logp_train - logp_rollout))``; a sample is kept when it lies in ``[1 - eps, 1 + eps]``.
    A sample with no trainable token is kept (it contributes nothing).

    Args:
        train_logprobs: ``[B, T]`` log-probs recomputed by the trainer.
        rollout_logprobs: ``[B, T]`` log-probs recorded at sampling time.
        mask: ``[B, T]`` 1 on trainable tokens.
        eps: half-width of the accepted band (Dr. Kernel uses 0.001).

    Returns:
        ``[B]`` bool.
    """
    if eps <= 0:
        raise ValueError(f"eps must be > 0, got {eps}")
    mask = mask.float()
    count = mask.sum(-1)
    mean_log_ratio = ((train_logprobs - rollout_logprobs) * mask).sum(-1) / count.clamp(min=1.0)
    ratio = torch.exp(mean_log_ratio)
    inside = (ratio >= 1.0 - eps) & (ratio <= 1.0 + eps)
    return inside | (count == 0)


def clipped_surrogate_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    weights: torch.Tensor,
    *,
    num_tokens: float | None = None,
    clip_low: float = 0.2,
    clip_high: float = 0.28,
    ref_logprobs: torch.Tensor | None = None,
    kl_coef: float = 0.0,
    kl_estimator: str = "k3",
    aggregation: str = "token_mean",
    num_samples: float | None = None,
    constant: float | None = None,
) -> LossOutput:
    """Token-level clipped surrogate, aggregated over the mini-batch (module docstring).

    A micro-batch holds whole samples (rows), so the per-sample sums of ``sequence_mean`` are complete
    inside it; the mini-batch-wide counts are passed in, which makes gradient accumulation over
    micro-batches give exactly the mini-batch gradient in every mode.

    Args:
        logprobs: ``[B, T]`` log-probs of the response tokens under the current policy (with grad).
        old_logprobs: ``[B, T]`` log-probs under the policy that sampled them (no grad).
        advantages: ``[B, T]`` per-token advantages.
        weights: ``[B, T]`` 0/1 (or any non-negative) weights: loss mask x overlong mask x kept samples.
        num_tokens: ``N`` for ``token_mean``: the number of trainable tokens in the whole mini-batch.
        clip_low: lower clip ``eps_low`` (ratio floor ``1 - eps_low``).
        clip_high: upper clip ``eps_high`` (ratio ceiling ``1 + eps_high``).
        ref_logprobs: ``[B, T]`` reference-policy log-probs for the KL term, or ``None``.
        kl_coef: ``beta``; needs ``ref_logprobs`` when > 0.
        kl_estimator: ``k3`` or ``k2`` (module docstring).
        aggregation: ``token_mean``, ``sequence_mean`` or ``constant``.
        num_samples: ``S`` for ``sequence_mean`` (samples of the mini-batch with a trainable token) or
            ``M`` for ``constant`` (samples of the mini-batch).
        constant: ``C`` for ``constant``.

    Returns:
        A :class:`LossOutput`.
    """
    if aggregation not in AGGREGATIONS:
        raise ValueError(f"aggregation must be one of {AGGREGATIONS}, got {aggregation!r}")
    if aggregation == "token_mean" and (num_tokens is None or num_tokens <= 0):
        raise ValueError(f"num_tokens must be > 0, got {num_tokens}")
    if aggregation != "token_mean" and (num_samples is None or num_samples <= 0):
        raise ValueError(f"{aggregation} needs num_samples > 0, got {num_samples}")
    if aggregation == "constant" and (constant is None or constant <= 0):
        raise ValueError(f"constant aggregation needs constant > 0, got {constant}")
    if clip_low < 0 or clip_high < 0 or clip_low >= 1:
        raise ValueError(f"clip_low must be in [0, 1) and clip_high >= 0, got {clip_low}, {clip_high}")
    if kl_coef > 0 and ref_logprobs is None:
        raise ValueError("kl_coef > 0 needs ref_logprobs")
    shapes = {t.shape for t in (logprobs, old_logprobs, advantages, weights)}
    if len(shapes) != 1:
        raise ValueError(f"logprobs, old_logprobs, advantages and weights must share a shape, got {shapes}")
    weights = weights.to(logprobs.dtype)
    log_ratio = (logprobs - old_logprobs.detach()).clamp(-20.0, 20.0)
    ratio = torch.exp(log_ratio)
    unclipped = ratio * advantages
    clipped = ratio.clamp(1.0 - clip_low, 1.0 + clip_high) * advantages
    surrogate = -torch.minimum(unclipped, clipped)
    per_token = surrogate
    kl_sum = 0.0
    if ref_logprobs is not None:
        kl = kl_penalty(logprobs, ref_logprobs.detach(), kl_estimator)
        kl_sum = float((kl.detach() * weights).sum())
        if kl_coef > 0:
            per_token = per_token + kl_coef * kl
    weighted = per_token * weights
    if aggregation == "token_mean":
        loss = weighted.sum() / num_tokens
    elif aggregation == "sequence_mean":
        loss = (weighted.sum(-1) / weights.sum(-1).clamp(min=1e-12)).sum() / num_samples
    else:
        loss = weighted.sum() / (num_samples * constant)
    active = weights > 0
    was_clipped = (clipped < unclipped) & active
    return LossOutput(
        loss=loss,
        tokens=float(weights.sum().detach()),
        clipped=float(was_clipped.sum()),
        kl_sum=kl_sum,
        ratio_sum=float((ratio.detach() * weights).sum()),
        policy_loss_sum=float((surrogate.detach() * weights).sum()),
    )
