"""Trainer on synthetic samples (no env): the update moves the policy the right way, micro-batching
does not change the gradient, overlong samples train nothing, checkpoints resume exactly; config I/O."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from ascend_kernel_gym.agents.config import SegmentGRPOConfig  # noqa: E402
from ascend_kernel_gym.agents.samples import EpisodeRecord, RolloutBatch, SegmentSample, TurnRecord  # noqa: E402
from ascend_kernel_gym.agents.trainer import (  # noqa: E402
    SegmentGRPOTrainer,
    pack_micro_batches,
    response_logprobs,
)

PROMPT = [{"role": "user", "content": "Pick A or B."}]


def make_trainer(policy, tmp_path, **overrides):
    from ascend_kernel_gym.tasks.suite import get_task

    values = dict(
        output_dir=str(tmp_path / "run"),
        learning_rate=1e-2,
        group_size=2,
        progress=False,
        tensorboard=False,
        resume=None,
        max_grad_norm=None,
    )
    values.update(overrides)
    config = SegmentGRPOConfig(**values)
    return SegmentGRPOTrainer(config, policy=policy, tasks=[get_task("core/L1/relu")], env_factory=lambda: None)


def make_batch(policy, answers, rewards, overlong=()):
    """One group; episode i answers ``answers[i]`` (one turn, one segment) and gets ``rewards[i]``.

    Rollout log-probs are the current model's, as a sampler with the same weights would give."""
    batch = RolloutBatch(group_size=len(answers))
    prompt_ids = policy.encode_messages(PROMPT)
    eos = policy.tokenizer.eos_token_id
    for i, (answer, reward) in enumerate(zip(answers, rewards)):
        response = [*policy.encode_text(answer), eos]
        sample = SegmentSample(
            group=0,
            episode=i,
            member=i,
            segment=0,
            task_id="t",
            prompt_ids=list(prompt_ids),
            response_ids=response,
            loss_mask=[1] * len(response),
            summary_mask=[0] * len(response),
            rollout_logprobs=[0.0] * len(response),
            turns=[0],
            overlong=i in overlong,
        )
        batch.samples.append(sample)
        episode = EpisodeRecord(group=0, member=i, task_id="t", samples=[i], overlong=i in overlong)
        episode.turns.append(
            TurnRecord(index=0, segment=0, is_summary=False, reward=reward, span=(0, len(response)), sample=i)
        )
        batch.episodes.append(episode)
    with torch.no_grad():
        logp, _ = response_logprobs(policy.model, batch.samples, 1.0, policy.device, None)
    for row, sample in enumerate(batch.samples):
        sample.rollout_logprobs = logp[row, logp.shape[1] - len(sample.response_ids) :].tolist()
    return batch


def answer_logprob(policy, answer):
    batch = make_batch(policy, [answer], [0.0])
    return sum(batch.samples[0].rollout_logprobs)


def test_update_raises_the_rewarded_answer(tiny_policy, tmp_path):
    trainer = make_trainer(tiny_policy, tmp_path)
    before_a, before_b = answer_logprob(tiny_policy, "A"), answer_logprob(tiny_policy, "B")
    for _ in range(5):
        metrics = trainer.update(make_batch(tiny_policy, ["A", "B"], [1.0, 0.0]))
    assert metrics["optimizer_steps"] == 1 and metrics["trained_tokens"] == 4
    # leave-one-out advantages +1 / -1: the rewarded answer gains probability, the other loses it
    assert answer_logprob(tiny_policy, "A") > before_a + 0.5
    assert answer_logprob(tiny_policy, "B") < before_b - 0.5


def test_first_step_ratio_is_one_and_nothing_is_clipped(tiny_policy, tmp_path):
    trainer = make_trainer(tiny_policy, tmp_path)
    metrics = trainer.update(make_batch(tiny_policy, ["A", "B"], [1.0, 0.0]))
    assert metrics["ratio_mean"] == pytest.approx(1.0, abs=1e-4)
    assert metrics["clip_fraction"] == 0.0


def test_micro_batching_does_not_change_the_gradient(char_tokenizer, tmp_path):
    from ascend_kernel_gym.agents.hf import HFPolicy
    from ascend_kernel_gym.agents.local_lm import build_random_causal_lm

    grads = []
    for max_tokens in (10_000, 1):  # one micro-batch for all samples vs one per sample
        policy = HFPolicy(build_random_causal_lm(tokenizer=char_tokenizer, seed=5), char_tokenizer)
        trainer = make_trainer(
            policy, tmp_path / str(max_tokens), max_tokens_per_micro_batch=max_tokens, learning_rate=1e-9
        )
        trainer.update(make_batch(policy, ["A", "Bcd", "xy"], [1.0, 0.0, 0.5]))
        grads.append(torch.cat([p.grad.flatten() for p in policy.model.parameters() if p.grad is not None]))
    assert grads[0].abs().sum() > 0
    assert torch.allclose(grads[0], grads[1], atol=1e-6, rtol=1e-4)


def test_overlong_samples_train_nothing(tiny_policy, tmp_path):
    trainer = make_trainer(tiny_policy, tmp_path)
    before = [p.detach().clone() for p in tiny_policy.model.parameters()]
    metrics = trainer.update(make_batch(tiny_policy, ["A", "B"], [1.0, 0.0], overlong={0, 1}))
    assert metrics["trained_tokens"] == 0 and metrics["optimizer_steps"] == 0
    assert all(torch.equal(a, b) for a, b in zip(before, tiny_policy.model.parameters()))
    # without the mask the same batch trains
    trainer = make_trainer(tiny_policy, tmp_path / "nomask", mask_overlong=False)
    assert trainer.update(make_batch(tiny_policy, ["A", "B"], [1.0, 0.0], overlong={0, 1}))["trained_tokens"] == 4


def test_mismatch_rejection_and_kl(tiny_policy, tmp_path):
    trainer = make_trainer(tiny_policy, tmp_path, mismatch_eps=0.01, kl_coef=0.1)
    batch = make_batch(tiny_policy, ["A", "B"], [1.0, 0.0])
    batch.samples[1].rollout_logprobs = [x - 0.5 for x in batch.samples[1].rollout_logprobs]  # a stale sampler
    metrics = trainer.update(batch)
    assert metrics["mismatch_dropped"] == 1
    assert metrics["trained_tokens"] == 2
    assert metrics["kl"] == pytest.approx(0.0, abs=1e-6)  # the reference equals the policy before the step
    second = trainer.update(make_batch(tiny_policy, ["A", "B"], [1.0, 0.0]))
    assert second["kl"] > 0  # after a step the policy has moved away from the reference


def test_checkpoint_resume_restores_everything(tiny_policy, char_tokenizer, tmp_path):
    from ascend_kernel_gym.agents.hf import HFPolicy, SamplingParams
    from ascend_kernel_gym.agents.local_lm import build_random_causal_lm

    trainer = make_trainer(tiny_policy, tmp_path)
    trainer.update(make_batch(tiny_policy, ["A", "B"], [1.0, 0.0]))
    trainer.iteration = 3
    tiny_policy.generate([PROMPT])  # advance the sampler
    path = trainer.save_checkpoint()
    assert path.name == "checkpoint-3"
    expected_next = [torch.rand(1).item(), trainer.rng.random()]
    expected_sample = tiny_policy.generate([PROMPT])[0].token_ids

    fresh = HFPolicy(
        build_random_causal_lm(tokenizer=char_tokenizer, seed=99),
        char_tokenizer,
        sampling=SamplingParams(max_new_tokens=6, seed=0),
    )
    resumed = make_trainer(fresh, tmp_path, resume="auto")
    assert resumed.iteration == 3 and resumed.optimizer_steps == 1
    for a, b in zip(tiny_policy.model.state_dict().values(), fresh.model.state_dict().values()):
        assert torch.equal(a, b)
    state_a = trainer.optimizer.state_dict()["optimizer"]["state"]
    state_b = resumed.optimizer.state_dict()["optimizer"]["state"]
    assert state_a.keys() == state_b.keys()
    assert all(torch.equal(state_a[k]["exp_avg"], state_b[k]["exp_avg"]) for k in state_a)
    assert [torch.rand(1).item(), resumed.rng.random()] == expected_next
    assert fresh.generate([PROMPT])[0].token_ids == expected_sample


def test_pack_micro_batches():
    # rows x longest <= 10: lengths sorted 6, 5, 4, 3, 2 -> [6] (6*2=12 > 10), [5, 4] (10), [3, 2] (6)
    groups = pack_micro_batches([3, 6, 2, 5, 4], 10)
    assert groups == [[1], [3, 4], [0, 2]]
    assert pack_micro_batches([50], 10) == [[0]]  # too long: alone
