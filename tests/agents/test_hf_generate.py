"""HFPolicy's ``generate`` engine (transformers' generate, dynamic or static KV cache) against its own loop."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from ascend_kernel_gym.agents.hf import HFPolicy, SamplingParams  # noqa: E402
from ascend_kernel_gym.agents.local_lm import build_random_causal_lm  # noqa: E402
from ascend_kernel_gym.agents.samples import SegmentSample  # noqa: E402
from ascend_kernel_gym.agents.trainer import response_logprobs  # noqa: E402

PROMPTS = [[{"role": "user", "content": "Write relu."}], [{"role": "user", "content": "Hi"}]]


def policy(tokenizer, **kw):
    sampling = kw.pop("sampling", SamplingParams(max_new_tokens=8, seed=3))
    model = build_random_causal_lm(tokenizer=tokenizer, seed=1)
    return HFPolicy(model, tokenizer, sampling=sampling, **kw)


@pytest.mark.parametrize("static_cache", [False, True])
def test_greedy_generate_matches_the_loop(char_tokenizer, static_cache):
    greedy = SamplingParams(temperature=0.0, max_new_tokens=8)
    loop = policy(char_tokenizer, sampling=greedy).generate(PROMPTS)
    hf = policy(char_tokenizer, sampling=greedy, engine="generate", static_cache=static_cache).generate(PROMPTS)
    for a, b in zip(loop, hf, strict=True):
        assert a.token_ids == b.token_ids
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-4)
        assert a.meta["finish_reason"] == b.meta["finish_reason"]


@pytest.mark.parametrize("static_cache", [False, True])
def test_generate_logprobs_are_the_trainers(char_tokenizer, static_cache):
    # sampled at temperature 0.7 with top-k 5: the recorded log-probs are log_softmax(logits / 0.7) before top-k,
    # exactly what the trainer recomputes for the importance ratio
    sampling = SamplingParams(temperature=0.7, top_k=5, max_new_tokens=8, seed=3)
    pol = policy(char_tokenizer, sampling=sampling, engine="generate", static_cache=static_cache)
    gens = pol.generate(PROMPTS)
    samples = [
        SegmentSample(
            group=0,
            episode=i,
            member=i,
            segment=0,
            task_id="t",
            prompt_ids=g.prompt_ids,
            response_ids=g.token_ids,
            loss_mask=[1] * len(g.token_ids),
            summary_mask=[0] * len(g.token_ids),
            rollout_logprobs=g.logprobs,
        )
        for i, g in enumerate(gens)
    ]
    with torch.no_grad():
        logp, _ = response_logprobs(pol.model, samples, 0.7, pol.device, "logits_to_keep")
    for row, g in enumerate(gens):
        assert len(g.token_ids) == len(g.logprobs) > 0
        assert logp[row, logp.shape[1] - len(g.token_ids) :].tolist() == pytest.approx(g.logprobs, abs=1e-4)


def test_generate_is_reproducible_from_the_seed(char_tokenizer):
    sampling = SamplingParams(temperature=1.0, max_new_tokens=8, seed=11)
    a = policy(char_tokenizer, sampling=sampling, engine="generate").generate(PROMPTS)
    b = policy(char_tokenizer, sampling=SamplingParams(temperature=1.0, max_new_tokens=8, seed=11), engine="generate")
    before = torch.random.get_rng_state()
    assert [g.token_ids for g in b.generate(PROMPTS)] == [g.token_ids for g in a]
    assert torch.equal(torch.random.get_rng_state(), before)  # the global RNG is left as it was


def test_unknown_engine_is_loud(char_tokenizer):
    with pytest.raises(ValueError, match="engine"):
        policy(char_tokenizer, engine="vllm-ish")
