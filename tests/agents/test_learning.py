"""Learning check: a tiny random LM trained with segment-GRPO through the REAL AscendTriton env.

Set-up: two tasks (relu, sigmoid), each with three prepared kernels (the reference solution, a
variant that fails at run time, a hack that subclasses the reference) behind the letters A/B/C,
shuffled per task (KernelChoiceWrapper); the real evaluator on the interpreter judges them (its
result cache makes repeats free); the real CompactionWrapper with the ``policy`` strategy and a
budget of 800 tokens makes every episode ask the policy for a summary after two kernel turns, so
episodes have two segments. The model (2-layer Qwen2, hidden 64, character tokenizer, random
weights) starts near chance: any answer selects a kernel, so about 1/3 of its kernel turns pick
the correct one.

Threshold (why it is not chance): the first iteration samples 16 episodes x 4 kernel turns = 64
turns from the untrained policy; the last two iterations sample 128 turns. Under "no learning"
both are Bernoulli(p ~ 1/3) and the difference of the two rates has a standard error of
sqrt(p(1-p)/64 + p(1-p)/128) = 0.072; requiring a rise of at least 0.3 is more than 4 standard
errors, and requiring a final rate of at least 0.75 is (0.75 - 0.33) / sqrt(0.222/128) = 10
standard errors above chance. The mean episode return must also rise by more than 4 standard
errors of the difference of the two batch means (computed from the batches themselves).
"""

from __future__ import annotations

import math

import pytest

pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

pytestmark = pytest.mark.slow

TASKS = ["core/L1/relu", "core/L1/sigmoid"]
ITERATIONS = 12


def _kernel_turns(batch):
    return [t for e in batch.episodes for t in e.turns if not t.is_summary]


def test_segment_grpo_learns_to_pick_the_correct_kernel(tmp_path):
    from ascend_kernel_gym.agents.config import SegmentGRPOConfig
    from ascend_kernel_gym.agents.trainer import SegmentGRPOTrainer, rollout_metrics

    config = SegmentGRPOConfig(
        model_config="tiny",
        tokenizer="char",
        init_seed=0,
        task_ids=TASKS,
        tasks_per_iteration=2,
        group_size=8,
        backend="interpreter",
        max_turns=4,
        reward="default",
        reward_mode="score",
        env_kwargs={"num_trials": 2},
        compaction={"budget_tokens": 800, "trigger_ratio": 1.0, "strategy": "policy", "max_compactions": 3},
        choice={"seed": 0},
        temperature=1.0,
        max_new_tokens=4,
        advantage="segment",
        gamma=1.0,
        learning_rate=1e-2,
        mini_batches=4,
        max_grad_norm=1.0,
        iterations=ITERATIONS,
        seed=0,
        output_dir=str(tmp_path / "run"),
        resume=None,
        save_every=0,
        progress=False,
        tensorboard=False,
    )
    trainer = SegmentGRPOTrainer(config)
    correct_rates, returns, segments = [], [], []
    try:
        for _ in range(ITERATIONS):
            batch = trainer.collect()
            turns = _kernel_turns(batch)
            correct_rates.append((sum(1 for t in turns if t.correct), len(turns)))
            returns.append([e.episode_return for e in batch.episodes])
            segments.append([e.num_segments for e in batch.episodes])
            metrics = rollout_metrics(batch)
            assert metrics["summary_turns_per_episode"] >= 1.0
            trainer.update(batch)
            trainer.iteration += 1
    finally:
        trainer.close()

    # compaction was active: every episode of every iteration had at least two segments
    assert all(min(s) >= 2 for s in segments), segments

    initial_correct = correct_rates[0][0] / correct_rates[0][1]
    final_hits = sum(c for c, _ in correct_rates[-2:])
    final_total = sum(n for _, n in correct_rates[-2:])
    final_correct = final_hits / final_total
    report = f"correct rate by iteration: {[round(c / n, 3) for c, n in correct_rates]}"
    assert 0.1 < initial_correct < 0.6, report  # the untrained policy is near chance (1/3)
    assert final_correct >= 0.75, report
    assert final_correct - initial_correct >= 0.3, report

    def mean_var(values):
        mu = sum(values) / len(values)
        return mu, sum((v - mu) ** 2 for v in values) / (len(values) - 1)

    r0, v0 = mean_var(returns[0])
    r1, v1 = mean_var(returns[-2] + returns[-1])
    se = math.sqrt(v0 / len(returns[0]) + v1 / (len(returns[-2]) + len(returns[-1])))
    assert r1 - r0 > 4 * se, f"returns {r0:.3f} -> {r1:.3f}, se {se:.3f}; {report}"
