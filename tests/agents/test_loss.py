"""The clipped surrogate on hand-made batches: masking, normalisation, clipping, overlong, KL, rejection."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from ascend_kernel_gym.agents.loss import (  # noqa: E402
    clipped_surrogate_loss,
    k3_kl,
    mismatch_keep,
    selective_log_softmax,
)

# Two samples, three response tokens each. old log-probs are 0, so ratio = exp(logp).
# Sample 0: ratios [1.0, 1.5, 0.5], advantage +1, loss mask [1, 1, 0]
# Sample 1: ratios [0.7, 1.1, 1.0], advantage -2, loss mask [1, 1, 1]
RATIOS = [[1.0, 1.5, 0.5], [0.7, 1.1, 1.0]]
ADV = [[1.0, 1.0, 1.0], [-2.0, -2.0, -2.0]]
MASK = [[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]]


def batch():
    logp = torch.log(torch.tensor(RATIOS)).requires_grad_(True)
    return logp, torch.zeros(2, 3), torch.tensor(ADV), torch.tensor(MASK)


def test_hand_computed_loss_and_clip_count():
    # per-token loss = -min(r A, clip(r, 0.8, 1.28) A):
    #  s0 t0: r=1.0:  -min(1.0, 1.0)      = -1.0
    #  s0 t1: r=1.5:  -min(1.5, 1.28)     = -1.28   (clipped)
    #  s0 t2: masked
    #  s1 t0: r=0.7:  -min(-1.4, -1.6)    = 1.6     (clipped: 0.7 < 0.8 with a negative advantage)
    #  s1 t1: r=1.1:  -min(-2.2, -2.2)    = 2.2
    #  s1 t2: r=1.0:  -min(-2.0, -2.0)    = 2.0
    # N = 5 trainable tokens -> (-1 - 1.28 + 1.6 + 2.2 + 2.0) / 5 = 3.52 / 5 = 0.704
    logp, old, adv, mask = batch()
    out = clipped_surrogate_loss(logp, old, adv, mask, num_tokens=5)
    assert float(out.loss.detach()) == pytest.approx(0.704, abs=1e-5)
    assert out.tokens == 5
    assert out.clipped == 2
    assert out.ratio_sum == pytest.approx(1.0 + 1.5 + 0.7 + 1.1 + 1.0, abs=1e-5)


def test_gradients_vanish_on_clipped_and_masked_tokens():
    # d loss / d logp = -r A / N on unclipped tokens, 0 on clipped or masked ones:
    #  s0 t0: -1*1/5 = -0.2;  s0 t1: 0 (clipped);  s0 t2: 0 (masked)
    #  s1 t0: 0 (clipped);    s1 t1: -(1.1*-2)/5 = 0.44;  s1 t2: -(1*-2)/5 = 0.4
    logp, old, adv, mask = batch()
    clipped_surrogate_loss(logp, old, adv, mask, num_tokens=5).loss.backward()
    assert logp.grad.tolist() == [pytest.approx([-0.2, 0.0, 0.0], abs=1e-6), pytest.approx([0.0, 0.44, 0.4], abs=1e-6)]


def test_overlong_sample_gets_zero_weight_and_leaves_the_normaliser():
    # Sample 1 overlong -> its weights are 0 and N = 2: (-1 - 1.28) / 2 = -1.14; no gradient reaches sample 1.
    logp, old, adv, mask = batch()
    weights = mask * torch.tensor([[1.0], [0.0]])
    out = clipped_surrogate_loss(logp, old, adv, weights, num_tokens=float(weights.sum()))
    assert float(out.loss.detach()) == pytest.approx(-1.14, abs=1e-5)
    out.loss.backward()
    assert logp.grad[1].abs().sum() == 0


def test_normalisation_is_per_batch_not_per_micro_batch():
    # Splitting the batch into micro-batches that all divide by the batch's N adds up to the full loss.
    logp, old, adv, mask = batch()
    full = clipped_surrogate_loss(logp, old, adv, mask, num_tokens=5).loss
    parts = sum(
        clipped_surrogate_loss(logp[i : i + 1], old[i : i + 1], adv[i : i + 1], mask[i : i + 1], num_tokens=5).loss
        for i in range(2)
    )
    assert float(parts.detach()) == pytest.approx(float(full.detach()), abs=1e-6)
    # ...whereas a per-sample mean (the bug this guards against) would give (-2.28/2 + 5.8/3) / 2 = 0.3966667.
    per_sample = (-2.28 / 2 + 5.8 / 3) / 2
    assert float(full.detach()) != pytest.approx(per_sample, abs=1e-3)


def test_asymmetric_clip_bounds():
    # Positive advantage: the ratio is capped at 1 + 0.28, not 1 + 0.2.  r = 1.25 is inside [0.8, 1.28]:
    # loss = -1.25; r = 1.3 is outside: loss = -1.28.
    for r, expected in ((1.25, -1.25), (1.3, -1.28)):
        logp = torch.log(torch.tensor([[r]]))
        out = clipped_surrogate_loss(logp, torch.zeros(1, 1), torch.ones(1, 1), torch.ones(1, 1), num_tokens=1)
        assert float(out.loss.detach()) == pytest.approx(expected, abs=1e-5)


def test_k3_kl_value_and_term():
    # logp = log 0.5, ref = log 0.25: d = ref - logp = log 0.5 = -0.6931472; k3 = e^d - d - 1 = 0.5 + 0.6931472 - 1
    k3 = 0.5 + math.log(2.0) - 1.0  # 0.1931472
    logp = torch.log(torch.tensor([[0.5]]))
    ref = torch.log(torch.tensor([[0.25]]))
    assert float(k3_kl(logp, ref)) == pytest.approx(k3, abs=1e-6)
    assert float(k3_kl(logp, logp)) == 0.0
    # Zero advantage, ratio 1 (old = logp): loss = beta * k3 = 0.1 * 0.1931472
    out = clipped_surrogate_loss(
        logp, logp, torch.zeros(1, 1), torch.ones(1, 1), num_tokens=1, ref_logprobs=ref, kl_coef=0.1
    )
    assert float(out.loss.detach()) == pytest.approx(0.1 * k3, abs=1e-6)
    assert out.kl_sum == pytest.approx(k3, abs=1e-6)


def test_mismatch_rejection_geometric_mean():
    # Sample 0: train - rollout = [0.01, 0.03] on trainable tokens (the third is masked, its 5.0 is ignored):
    #   exp(mean) = exp(0.02) = 1.0202 -> outside [0.99, 1.01], inside [0.95, 1.05]
    # Sample 1: train - rollout = [0, 0, 0] -> ratio 1, always kept. Sample 2 has no trainable token -> kept.
    train = torch.tensor([[0.01, 0.03, 5.0], [0.0, 0.0, 0.0], [3.0, 3.0, 3.0]])
    rollout = torch.zeros(3, 3)
    mask = torch.tensor([[1, 1, 0], [1, 1, 1], [0, 0, 0]])
    assert mismatch_keep(train, rollout, mask, 0.01).tolist() == [False, True, True]
    assert mismatch_keep(train, rollout, mask, 0.05).tolist() == [True, True, True]


def test_selective_log_softmax_matches_log_softmax():
    torch.manual_seed(0)
    logits = torch.randn(2, 4, 7)
    targets = torch.randint(0, 7, (2, 4))
    expected = torch.log_softmax(logits, -1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    assert torch.allclose(selective_log_softmax(logits, targets), expected, atol=1e-6)


def test_misuse_is_loud():
    logp, old, adv, mask = batch()
    with pytest.raises(ValueError, match="num_tokens"):
        clipped_surrogate_loss(logp, old, adv, mask, num_tokens=0)
    with pytest.raises(ValueError, match="ref_logprobs"):
        clipped_surrogate_loss(logp, old, adv, mask, num_tokens=5, kl_coef=0.1)
    with pytest.raises(ValueError, match="shape"):
        clipped_surrogate_loss(logp, old[:, :2], adv, mask, num_tokens=5)
