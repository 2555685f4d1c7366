"""The segment-GRPO policy loss: a token-level clipped surrogate with asymmetric clipping.

For a token ``t`` of sample ``s`` with weight ``w_s,t`` (1 for a trainable policy token of a
kept, non-overlong sample, else 0), advantage ``A_s,t``, ratio ``rho = exp(logp - logp_old)``:

``L = (1/N) * sum_{s,t} w_s,t * ( -min(rho A, clip(rho, 1 - eps_low, 1 + eps_high) A) + beta * k3_s,t )``

with ``N = sum w`` over the whole batch (not per sample, not per micro-batch) and the k3 KL
estimator ``k3 = exp(logp_ref - logp) - (logp_ref - logp) - 1`` (non-negative, unbiased for
KL(pi || pi_ref)). Imports torch: import this module only where training happens.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


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


def selective_log_softmax(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """``log_softmax(logits)[..., targets]`` without materialising the full float32 log-softmax.

    Args:
        logits: ``[B, T, V]`` (any float dtype).
        targets: ``[B, T]`` token ids.

    Returns:
        ``[B, T]`` float32 log-probabilities.
    """
    rows = []
    for row_logits, row_targets in zip(logits, targets, strict=True):  # one row at a time bounds memory
        row_logits = row_logits.float()
        picked = row_logits.gather(-1, row_targets.unsqueeze(-1)).squeeze(-1)
        rows.append(picked - torch.logsumexp(row_logits, dim=-1))
    return torch.stack(rows)


def k3_kl(logprobs: torch.Tensor, ref_logprobs: torch.Tensor) -> torch.Tensor:
    """Per-token k3 estimate of KL(pi || pi_ref): ``exp(d) - d - 1`` with ``d = logp_ref - logp``."""
    delta = (ref_logprobs - logprobs).clamp(-20.0, 20.0)
    return torch.exp(delta) - delta - 1.0


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
    num_tokens: float,
    clip_low: float = 0.2,
    clip_high: float = 0.28,
    ref_logprobs: torch.Tensor | None = None,
    kl_coef: float = 0.0,
) -> LossOutput:
    """Token-level clipped surrogate, normalised by the batch's trainable-token count.

    Args:
        logprobs: ``[B, T]`` log-probs of the response tokens under the current policy (with grad).
        old_logprobs: ``[B, T]`` log-probs under the policy that sampled them (no grad).
        advantages: ``[B, T]`` per-token advantages.
        weights: ``[B, T]`` 0/1 (or any non-negative) weights: loss mask x overlong mask x kept samples.
        num_tokens: ``N``, the number of trainable tokens in the whole batch this micro-batch belongs to.
        clip_low: lower clip ``eps_low`` (ratio floor ``1 - eps_low``).
        clip_high: upper clip ``eps_high`` (ratio ceiling ``1 + eps_high``).
        ref_logprobs: ``[B, T]`` reference-policy log-probs for the KL term, or ``None``.
        kl_coef: ``beta``; needs ``ref_logprobs`` when > 0.

    Returns:
        A :class:`LossOutput`.
    """
    if num_tokens <= 0:
        raise ValueError(f"num_tokens must be > 0, got {num_tokens}")
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
        kl = k3_kl(logprobs, ref_logprobs.detach())
        kl_sum = float((kl.detach() * weights).sum())
        if kl_coef > 0:
            per_token = per_token + kl_coef * kl
    loss = (per_token * weights).sum() / num_tokens
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
