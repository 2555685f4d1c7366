"""Rollout collection through the real AscendTritonEnv + CompactionWrapper (a stand-in evaluator keeps it
fast; the learning test uses the real one): segment samples, token streams, masks, log-probs."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

from ascend_kernel_gym.agents.rollout import collect_rollouts, env_delta_text  # noqa: E402
from ascend_kernel_gym.agents.scripted import ChoicePolicy, ReferencePolicy  # noqa: E402
from ascend_kernel_gym.agents.trainer import response_logprobs  # noqa: E402
from ascend_kernel_gym.tasks.suite import get_task  # noqa: E402
from ascend_kernel_gym.wrappers.choice import KernelChoiceWrapper  # noqa: E402

TASKS = ["core/L1/relu", "core/L1/gelu"]


def make_factory(
    evaluator, *, tokenizer=None, budget=None, max_compactions=4, max_turns=4, choice=True, reward_mode="score"
):
    from ascend_kernel_gym.envs.ascend_triton import AscendTritonEnv
    from ascend_kernel_gym.wrappers.compaction import CompactionWrapper

    def factory():
        env = AscendTritonEnv(
            task_ids=TASKS, backend="interpreter", evaluator=evaluator, max_turns=max_turns, reward_mode=reward_mode
        )
        if choice:
            env = KernelChoiceWrapper(env)
        if budget is not None:
            env = CompactionWrapper(
                env,
                budget_tokens=budget,
                strategy="policy",
                tokenizer=tokenizer,
                max_compactions=max_compactions,
                trigger_ratio=1.0,
            )
        return env

    return factory


class RecordingPolicy:
    """Wraps an HFPolicy and records every (prompt ids, generation) pair it produced."""

    def __init__(self, inner):
        self.inner = inner
        self.calls = []
        self.stop_ids = inner.stop_ids

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def render(self, messages, add_generation_prompt=True):
        return self.inner.render(messages, add_generation_prompt)

    def encode_text(self, text):
        return self.inner.encode_text(text)

    def decode(self, ids, keep_special=False):
        return self.inner.decode(ids, keep_special)

    def generate(self, batch):
        return self.inner.generate(batch)

    def generate_from_ids(self, prompts):
        gens = self.inner.generate_from_ids(prompts)
        self.calls.extend((list(p), g) for p, g in zip(prompts, gens))
        return gens


def test_text_policy_rollout_rewards_and_groups(fake_evaluator):
    # The correct label differs per task; a policy that always answers it gets 0.5 per turn (score mode).
    factory = make_factory(fake_evaluator, max_turns=3)
    probe = factory()
    correct = {}
    for task_id in TASKS:
        _obs, info = probe.reset(seed=0, options={"task_id": task_id})
        correct[task_id] = info["choice"]["correct"]

    class Oracle(ChoicePolicy):
        def generate(self, batch):
            from ascend_kernel_gym.agents.policy import Generation
            from ascend_kernel_gym.agents.scripted import task_id_from_messages

            return [Generation(text=correct[task_id_from_messages(m)]) for m in batch]

    batch = collect_rollouts(Oracle(), [get_task(t) for t in TASKS], 3, env_factory=factory)
    assert len(batch.episodes) == 6 and [e.group for e in batch.episodes] == [0, 0, 0, 1, 1, 1]
    assert [e.task_id for e in batch.episodes[::3]] == TASKS
    for episode in batch.episodes:
        assert [t.reward for t in episode.turns] == pytest.approx([0.5, 0.5, 0.5])
        assert episode.best_correct and episode.truncated and episode.episode_return == pytest.approx(1.5)
    assert len(batch.samples) == 6 and all(s.response_ids == [] for s in batch.samples)
    # each distinct kernel is evaluated by the evaluator; the env does not cache, the real evaluator does
    assert fake_evaluator.calls >= 6


def test_token_rollout_with_compaction_segments(tiny_policy, char_tokenizer, fake_evaluator):
    policy = RecordingPolicy(tiny_policy)
    # budget 700 tokens, trigger at 100%: the short choice prompt (150-220 tokens) plus two turns of
    # feedback (~300 tokens each) exceed it, so episodes ask for a summary and go on in a new segment.
    factory = make_factory(fake_evaluator, tokenizer=char_tokenizer, budget=700, max_turns=3)
    batch = collect_rollouts(policy, [get_task(t) for t in TASKS], 2, env_factory=factory, seed=1)
    assert len(batch.episodes) == 4
    assert any(e.num_segments >= 2 for e in batch.episodes), [e.num_segments for e in batch.episodes]
    summaries = [t for e in batch.episodes for t in e.turns if t.is_summary]
    assert summaries, "no summary turn happened"
    by_prompt = {}
    for prompt, gen in policy.calls:
        by_prompt.setdefault(tuple(prompt), []).append(gen)
    for e_index, episode in enumerate(batch.episodes):
        assert sum(1 for t in episode.turns if not t.is_summary) == 3  # max_turns kernel turns
        assert [batch.samples[i].segment for i in episode.samples] == sorted({t.segment for t in episode.turns})
        for turn in episode.turns:
            sample = batch.samples[turn.sample]
            assert sample.episode == e_index and turn.segment == sample.segment
            start, end = turn.span
            # the policy generated exactly these tokens from exactly this prefix
            prefix = tuple(sample.prompt_ids + sample.response_ids[:start])
            assert any(g.token_ids == sample.response_ids[start:end] for g in by_prompt[prefix])
            assert all(m == 1 for m in sample.loss_mask[start:end])
            assert all(m == int(turn.is_summary) for m in sample.summary_mask[start:end])
    for sample in batch.samples:
        sample.check()
        # the prompt is the chat-template rendering of the context at the segment's start
        text = char_tokenizer.decode(sample.prompt_ids)
        assert text.startswith("<|im_start|>system\n") and text.endswith("<|im_start|>assistant\n")
        # environment tokens (mask 0) sit between turns and hold the env's feedback
        env_text = char_tokenizer.decode([t for t, m in zip(sample.response_ids, sample.loss_mask) if m == 0])
        if len(sample.turns) > 1:
            assert "Result of turn" in env_text
    # a segment that starts after a compaction begins from the policy-written summary
    later = [s for s in batch.samples if s.segment > 0]
    assert later and all("summary of the conversation" in char_tokenizer.decode(s.prompt_ids) for s in later)
    # rollout log-probs are the model's log-probs of the response tokens in the sample's own context
    with torch.no_grad():
        logp, _ = response_logprobs(tiny_policy.model, batch.samples, 1.0, tiny_policy.device, None)
    for row, sample in enumerate(batch.samples):
        recomputed = logp[row, logp.shape[1] - len(sample.response_ids) :]
        mask = torch.tensor(sample.loss_mask, dtype=torch.bool)
        assert torch.allclose(recomputed[mask], torch.tensor(sample.rollout_logprobs)[mask], atol=1e-4)


def test_overlong_episodes_are_flagged(tiny_policy, char_tokenizer, fake_evaluator):
    # No compaction allowed: the first time the context reaches the budget (here: after the first turn,
    # whose feedback alone is ~300 tokens) the episode ends overlong.
    factory = make_factory(fake_evaluator, tokenizer=char_tokenizer, budget=300, max_compactions=0, max_turns=4)
    batch = collect_rollouts(tiny_policy, [get_task(TASKS[0])], 2, env_factory=factory)
    for episode in batch.episodes:
        assert episode.overlong and episode.truncated and len(episode.turns) == 1
        assert all(batch.samples[i].overlong for i in episode.samples)


def test_reference_policy_through_the_full_env(fake_evaluator):
    factory = make_factory(fake_evaluator, choice=False, max_turns=2, reward_mode="improvement")
    batch = collect_rollouts(ReferencePolicy(broken_attempts=1), [get_task(TASKS[0])], 2, env_factory=factory)
    for episode in batch.episodes:
        assert [t.correct for t in episode.turns] == [False, True]
        assert episode.best_correct
        # improvement mode: the return equals the best score (0.5 for a correct kernel without a speedup)
        assert episode.episode_return == pytest.approx(0.5)


def test_env_delta_text_paths(tiny_policy):
    context = [{"role": "system", "content": "s"}, {"role": "user", "content": "task"}]
    stream = tiny_policy.render(context) + "A" + "<|im_end|>"
    new = [*context, {"role": "assistant", "content": "A"}, {"role": "user", "content": "fb"}]
    # exact path: the template continues the stream
    assert (
        env_delta_text(tiny_policy, stream, context, new, True) == "\n<|im_start|>user\nfb<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    # the env stored a cleaned-up answer ("A" -> "A!"): fall back to the template text after the answer
    cleaned = [*context, {"role": "assistant", "content": "A!"}, {"role": "user", "content": "fb"}]
    assert (
        env_delta_text(tiny_policy, stream, context, cleaned, True) == "\n<|im_start|>user\nfb<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    # generation cut by the length limit: the end-of-turn token is added
    cut = tiny_policy.render(context) + "A"
    assert env_delta_text(tiny_policy, cut, context, new, False).startswith("<|im_end|>\n<|im_start|>user")
    # earlier context rewritten: a new stream is needed
    rewritten = [{"role": "system", "content": "other"}, *new[1:]]
    assert env_delta_text(tiny_policy, stream, context, rewritten, True) is None
