"""HFPolicy (agents/hf.py), a local Hugging Face LM: padding, log-probs, stopping, sampling, batching,
LoRA, loading a saved model."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

CONTEXTS = [
    [{"role": "user", "content": "hi"}],
    [{"role": "system", "content": "a much longer system message"}, {"role": "user", "content": "Pick A, B or C"}],
]


def test_hf_left_padded_logprobs_match_unpadded_forward(tiny_policy):
    gens = tiny_policy.generate(CONTEXTS)
    assert len(gens) == 2
    assert len(gens[0].prompt_ids) != len(gens[1].prompt_ids)  # the batch really needed padding
    for gen, messages in zip(gens, CONTEXTS):
        assert gen.prompt_ids == tiny_policy.encode_messages(messages)
        assert len(gen.token_ids) == len(gen.logprobs) > 0
        ids = torch.tensor([gen.prompt_ids + gen.token_ids])
        with torch.no_grad():
            logits = tiny_policy.model(input_ids=ids).logits[0, len(gen.prompt_ids) - 1 : -1]
        expected = torch.log_softmax(logits.float(), -1).gather(-1, torch.tensor(gen.token_ids)[:, None]).squeeze(-1)
        assert torch.allclose(expected, torch.tensor(gen.logprobs), atol=1e-4)
        assert gen.text == tiny_policy.decode(gen.token_ids)


def test_hf_stops_at_eos_and_reports_finish_reason(tiny_policy):
    # Make <|im_end|> overwhelmingly likely: every answer is exactly one stop token.
    eos = tiny_policy.tokenizer.eos_token_id
    with torch.no_grad():
        tiny_policy.model.lm_head.weight[eos] += 50.0 * tiny_policy.model.lm_head.weight.abs().max()
    head = tiny_policy.model.get_output_embeddings()
    if head.bias is not None:  # pragma: no cover - the tiny model has no bias
        head.bias[eos] += 100
    gens = tiny_policy.generate(CONTEXTS)
    assert all(g.meta["finish_reason"] in ("stop", "length") for g in gens)
    stopped = [g for g in gens if g.meta["finish_reason"] == "stop"]
    for g in stopped:
        assert g.token_ids[-1] == eos and eos not in g.token_ids[:-1]
        assert g.text == tiny_policy.decode(g.token_ids)


def test_hf_length_limit_and_seeded_sampling(char_tokenizer):
    from ascend_kernel_gym.agents.hf import HFPolicy, SamplingParams
    from ascend_kernel_gym.agents.local_lm import build_random_causal_lm

    model = build_random_causal_lm(tokenizer=char_tokenizer, seed=1)
    runs = []
    for _ in range(2):
        policy = HFPolicy(model, char_tokenizer, sampling=SamplingParams(max_new_tokens=5, seed=7, top_k=10))
        runs.append([g.token_ids for g in policy.generate(CONTEXTS)])
    assert runs[0] == runs[1]  # same seed, same samples
    assert all(len(ids) <= 5 for ids in runs[0])
    greedy = HFPolicy(model, char_tokenizer, sampling=SamplingParams(max_new_tokens=5, temperature=0.0))
    a, b = greedy.generate(CONTEXTS), greedy.generate(CONTEXTS)
    assert [g.token_ids for g in a] == [g.token_ids for g in b]


def test_hf_batching_split_matches_one_batch(char_tokenizer):
    from ascend_kernel_gym.agents.hf import HFPolicy, SamplingParams
    from ascend_kernel_gym.agents.local_lm import build_random_causal_lm

    model = build_random_causal_lm(tokenizer=char_tokenizer, seed=2)
    greedy = SamplingParams(max_new_tokens=4, temperature=0.0)
    one = HFPolicy(model, char_tokenizer, sampling=greedy, max_batch_size=8).generate(CONTEXTS * 2)
    split = HFPolicy(model, char_tokenizer, sampling=greedy, max_batch_size=1).generate(CONTEXTS * 2)
    assert [g.token_ids for g in one] == [g.token_ids for g in split]


def test_hf_lora_trains_only_adapters(char_tokenizer):
    pytest.importorskip("peft")
    from ascend_kernel_gym.agents.hf import HFPolicy
    from ascend_kernel_gym.agents.local_lm import build_random_causal_lm

    model = build_random_causal_lm(tokenizer=char_tokenizer, seed=3)
    policy = HFPolicy(model, char_tokenizer, lora={"r": 2, "alpha": 4})
    trainable = [n for n, p in policy.model.named_parameters() if p.requires_grad]
    assert trainable and all("lora" in n for n in trainable)
    assert policy.describe()["lora"]["r"] == 2
    assert len(policy.generate(CONTEXTS[:1])[0].token_ids) > 0


def test_hf_misuse_is_loud(char_tokenizer, tmp_path):
    from ascend_kernel_gym.agents.hf import HFPolicy, SamplingParams
    from ascend_kernel_gym.agents.local_lm import build_random_causal_lm

    model = build_random_causal_lm(tokenizer=char_tokenizer, seed=0)
    with pytest.raises(ValueError, match="tokenizer"):
        HFPolicy(model)
    with pytest.raises(FileNotFoundError, match="local directory"):
        HFPolicy(str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="top_p"):
        SamplingParams(top_p=0.0)
    with pytest.raises(ValueError, match="empty"):
        HFPolicy(model, char_tokenizer).generate_from_ids([[]])


def test_hf_loads_a_saved_local_model(char_tokenizer, tmp_path):
    from ascend_kernel_gym.agents.hf import HFPolicy, SamplingParams
    from ascend_kernel_gym.agents.local_lm import build_random_causal_lm, save_local_model

    model = build_random_causal_lm(tokenizer=char_tokenizer, seed=4)
    path = save_local_model(model, char_tokenizer, tmp_path / "m")
    greedy = SamplingParams(max_new_tokens=4, temperature=0.0)
    loaded = HFPolicy(str(path), sampling=greedy, device="cpu")
    direct = HFPolicy(model, char_tokenizer, sampling=greedy)
    assert [g.token_ids for g in loaded.generate(CONTEXTS)] == [g.token_ids for g in direct.generate(CONTEXTS)]
