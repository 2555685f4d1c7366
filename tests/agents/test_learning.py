"""Learning check: a tiny random LM trained with segment-GRPO through the REAL AscendTriton env.

Set-up: two tasks (relu, sigmoid), each with three prepared kernels (the reference solution, a
variant that fails at run time, a hack that subclasses the reference) behind the letters A/B/C,
shuffled per task with seed 0 (which happens to put the correct kernel behind ``A`` for both, so
the policy does not need to tell the tasks apart); the real evaluator on the interpreter judges
them (its result cache makes repeats free); the real CompactionWrapper with the ``policy``
strategy and a 330-token budget asks the policy for a summary after the second kernel turn, so
every episode has two segments: [turn 1, turn 2, summary] and [turn 3]. The model (2-layer Qwen2,
hidden 64, random weights) uses a byte-level BPE tokenizer (1024 tokens) trained locally on the
package's own text. Rewards: the ``default`` preset per turn (``score`` mode): correct 0.5,
run-time failure -0.4, hack -1.0. Any answer selects a kernel (its first character), so the
untrained policy picks the correct one about 1/3 of the time.

Threshold (why it is not chance): training runs until the correct rate over the kernel turns of
the last two iterations (2 x 16 episodes x 3 turns = 96 turns) reaches 0.8, for at most
MAX_ITERATIONS iterations, and the test asserts that it got there. Under "no learning" the turns
are Bernoulli(p ~ 1/3): the standard error of a 96-turn rate is sqrt(0.222 / 96) = 0.048, so 0.8
is 9.7 standard errors above chance (a one-sided tail below 1e-20, even across all the windows
checked). The test also asserts that the first iteration (48 turns, untrained) was near chance,
that the rate rose by at least 0.35 from it, and that the mean episode return rose by more than
4 standard errors of the difference of the two batch means (computed from the batches).
"""

from __future__ import annotations

import math

import pytest

pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

pytestmark = pytest.mark.slow

TASKS = ["core/L1/relu", "core/L1/sigmoid"]
MAX_ITERATIONS = 20
TARGET = 0.8


def _kernel_turns(batch):
    return [t for e in batch.episodes for t in e.turns if not t.is_summary]


def test_segment_grpo_learns_to_pick_the_correct_kernel(tmp_path):
    from ascend_kernel_gym.agents.config import SegmentGRPOConfig
    from ascend_kernel_gym.agents.trainer import SegmentGRPOTrainer, rollout_metrics

    config = SegmentGRPOConfig(
        model_config="tiny",
        tokenizer="bpe:1024",
        init_seed=0,
        task_ids=TASKS,
        tasks_per_iteration=2,
        group_size=8,
        backend="interpreter",
        max_turns=3,
        reward="default",
        reward_mode="score",
        env_kwargs={"num_trials": 2},
        compaction={"budget_tokens": 330, "trigger_ratio": 1.0, "strategy": "policy", "max_compactions": 2},
        choice={"seed": 0},
        temperature=1.0,
        max_new_tokens=4,
        advantage="segment",
        gamma=1.0,
        learning_rate=2e-2,
        mini_batches=4,
        max_grad_norm=1.0,
        iterations=MAX_ITERATIONS,
        seed=0,
        output_dir=str(tmp_path / "run"),
        resume=None,
        save_every=0,
        progress=False,
        tensorboard=False,
    )
    trainer = SegmentGRPOTrainer(config)
    correct_rates, returns, segments = [], [], []

    def window_rate():
        hits = sum(c for c, _ in correct_rates[-2:])
        return hits / sum(n for _, n in correct_rates[-2:])

    try:
        while trainer.iteration < MAX_ITERATIONS:
            batch = trainer.collect()
            turns = _kernel_turns(batch)
            correct_rates.append((sum(1 for t in turns if t.correct), len(turns)))
            returns.append([e.episode_return for e in batch.episodes])
            segments.append([e.num_segments for e in batch.episodes])
            metrics = rollout_metrics(batch)
            assert metrics["summary_turns_per_episode"] >= 1.0
            trainer.update(batch)
            trainer.iteration += 1
            if len(correct_rates) >= 2 and window_rate() >= TARGET:
                break
    finally:
        trainer.close()

    report = f"correct rate by iteration: {[round(c / n, 3) for c, n in correct_rates]}"
    # compaction was active: every episode of every iteration had two segments
    assert all(min(s) >= 2 for s in segments), segments
    initial_correct = correct_rates[0][0] / correct_rates[0][1]
    final_correct = window_rate()
    assert 0.1 < initial_correct < 0.6, report  # the untrained policy is near chance (1/3)
    assert final_correct >= TARGET, report
    assert final_correct - initial_correct >= 0.35, report

    def mean_var(values):
        mu = sum(values) / len(values)
        return mu, sum((v - mu) ** 2 for v in values) / (len(values) - 1)

    r0, v0 = mean_var(returns[0])
    r1, v1 = mean_var(returns[-2] + returns[-1])
    se = math.sqrt(v0 / len(returns[0]) + v1 / (len(returns[-2]) + len(returns[-1])))
    assert r1 - r0 > 4 * se, f"returns {r0:.3f} -> {r1:.3f}, se {se:.3f}; {report}"
