"""Loss aggregation modes and the KL estimators' gradient directions, against numbers worked out by hand."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from ascend_kernel_gym.agents.loss import clipped_surrogate_loss, kl_penalty  # noqa: E402

# Two samples, ratio 1 (logp = old), so each weighted token's surrogate is -A.
#   sample 0: tokens A = [1, 1, 1, 5], weights [1, 1, 1, 0] -> l = [-1, -1, -1], n_0 = 3
#   sample 1: tokens A = [-2, 0, 0, 0], weights [1, 0, 0, 0] -> l = [2], n_1 = 1
ADV = torch.tensor([[1.0, 1.0, 1.0, 5.0], [-2.0, 0.0, 0.0, 0.0]])
W = torch.tensor([[1.0, 1.0, 1.0, 0.0], [1.0, 0.0, 0.0, 0.0]])


def run(aggregation, rows=slice(None), **kw):
    logp = torch.full((2, 4), -1.0, requires_grad=True)
    out = clipped_surrogate_loss(logp[rows], logp.detach()[rows], ADV[rows], W[rows], aggregation=aggregation, **kw)
    out.loss.backward()
    return float(out.loss.detach()), logp.grad


def test_token_mean():
    # (-3 + 2) / N = -1 / 4; d/dlogp of -rho A / N at rho 1 = -A / N: [-0.25]*3 and 2 / 4 = 0.5
    loss, grad = run("token_mean", num_tokens=4)
    assert loss == pytest.approx(-0.25)
    assert grad[0, :3].tolist() == pytest.approx([-0.25] * 3) and grad[1, 0] == pytest.approx(0.5)


def test_sequence_mean_weighs_samples_equally():
    # (mean of sample 0 + mean of sample 1) / S = (-3/3 + 2/1) / 2 = 0.5
    # grads: sample 0 -A / (n_0 S) = -1/6 per token; sample 1: 2 / (1 * 2) = 1
    loss, grad = run("sequence_mean", num_samples=2)
    assert loss == pytest.approx(0.5)
    assert grad[0, :3].tolist() == pytest.approx([-1 / 6] * 3) and grad[1, 0] == pytest.approx(1.0)
    assert grad[0, 3] == 0.0  # masked token


def test_constant_dr_grpo():
    # sum(w l) / (M C) = -1 / (2 * 8) = -0.0625; grads -A / 16
    loss, grad = run("constant", num_samples=2, constant=8)
    assert loss == pytest.approx(-0.0625)
    assert grad[0, 0] == pytest.approx(-1 / 16) and grad[1, 0] == pytest.approx(2 / 16)


@pytest.mark.parametrize(
    ("aggregation", "kw"),
    [
        ("token_mean", {"num_tokens": 4}),
        ("sequence_mean", {"num_samples": 2}),
        ("constant", {"num_samples": 2, "constant": 8}),
    ],
)
def test_micro_batches_add_up_to_the_mini_batch(aggregation, kw):
    whole, _ = run(aggregation, **kw)
    parts = run(aggregation, slice(0, 1), **kw)[0] + run(aggregation, slice(1, 2), **kw)[0]
    assert parts == pytest.approx(whole)


def test_aggregation_misuse_is_loud():
    logp = torch.zeros(1, 2)
    with pytest.raises(ValueError, match="aggregation"):
        clipped_surrogate_loss(logp, logp, logp, logp + 1, num_tokens=2, aggregation="sum")
    with pytest.raises(ValueError, match="num_samples"):
        clipped_surrogate_loss(logp, logp, logp, logp + 1, aggregation="sequence_mean")
    with pytest.raises(ValueError, match="constant"):
        clipped_surrogate_loss(logp, logp, logp, logp + 1, aggregation="constant", num_samples=1)


def expected_penalty_gradient(estimator):
    """E_{x ~ pi}[grad_theta penalty(x)] for pi = softmax(theta) over 3 outcomes (sampling not differentiated)."""
    theta = torch.tensor([0.3, -0.2, 0.5], requires_grad=True)
    ref = torch.log_softmax(torch.tensor([1.0, 0.0, -1.0]), -1)
    logp = torch.log_softmax(theta, -1)
    pi = logp.exp().detach()
    (pi * kl_penalty(logp, ref, estimator)).sum().backward()
    return theta.grad, theta, ref


def kl_gradient(direction):
    theta = torch.tensor([0.3, -0.2, 0.5], requires_grad=True)
    ref = torch.log_softmax(torch.tensor([1.0, 0.0, -1.0]), -1)
    logp = torch.log_softmax(theta, -1)
    if direction == "pi||ref":
        kl = (logp.exp() * (logp - ref)).sum()
    else:  # ref||pi
        kl = (ref.exp() * (ref - logp)).sum()
    kl.backward()
    return theta.grad


def test_k3_gradient_is_that_of_kl_ref_pi_and_k2_that_of_kl_pi_ref():
    # E_pi[grad k3] = E_pi[(1 - ref/pi) grad log pi] = -sum_x ref(x) grad log pi(x) = grad KL(ref || pi)
    # E_pi[grad k2] = E_pi[(log pi - log ref) grad log pi] = grad KL(pi || ref)
    k3_grad, _, _ = expected_penalty_gradient("k3")
    k2_grad, _, _ = expected_penalty_gradient("k2")
    assert torch.allclose(k3_grad, kl_gradient("ref||pi"), atol=1e-6)
    assert torch.allclose(k2_grad, kl_gradient("pi||ref"), atol=1e-6)
    assert not torch.allclose(k3_grad, kl_gradient("pi||ref"), atol=1e-3)


def test_selective_log_softmax_keeps_no_float32_copy_of_the_logits():
    from ascend_kernel_gym.agents.loss import selective_log_softmax

    logits = torch.randn(4, 16, 1000, dtype=torch.bfloat16, requires_grad=True)
    targets = torch.randint(0, 1000, (4, 16))
    saved = []

    def pack(tensor):
        saved.append((tensor.dtype, tensor.numel()))
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = selective_log_softmax(logits, targets)
    # a [16, 1000] float32 row (or a [4, 16, 1000] one) kept for backward is what blew the H200 update's memory
    assert not [s for s in saved if s[0] == torch.float32 and s[1] >= 16 * 1000], saved
    out.sum().backward()
    # the gradient is still exact: d/dlogits of sum(log_softmax[target]) = onehot - softmax
    expected = torch.nn.functional.one_hot(targets, 1000).float() - torch.softmax(logits.detach().float(), -1)
    assert torch.allclose(logits.grad.float(), expected, atol=1e-2)
    reference = torch.log_softmax(logits.detach().float(), -1).gather(-1, targets[..., None]).squeeze(-1)
    assert torch.allclose(out.detach(), reference, atol=1e-5)
