"""Local tokenizers and random models (agents/local_lm.py): nothing downloaded, round trips, determinism."""

from __future__ import annotations

import string

import pytest

pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

from ascend_kernel_gym.agents.local_lm import (  # noqa: E402
    SPECIAL_TOKENS,
    build_bpe_tokenizer,
    build_char_tokenizer,
    build_random_causal_lm,
    load_tokenizer,
    save_local_model,
)

SMALL = {"architecture": "qwen2", "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1}
SMALL |= {"num_attention_heads": 2, "num_key_value_heads": 1, "max_position_embeddings": 128}
CORPUS = ["def relu(x):\n    return max(x, 0)\n", "tl.load(x_ptr + offsets, mask=mask)\n" * 3, "caf\u00e9 \u6570\n"]


def test_char_tokenizer_gives_one_token_per_character_and_decodes_back(char_tokenizer) -> None:
    text = string.ascii_letters + string.digits + string.punctuation + " \n\t"
    ids = char_tokenizer.encode(text, add_special_tokens=False)
    assert len(ids) == len(text) and char_tokenizer.decode(ids) == text
    assert len(char_tokenizer) == len(SPECIAL_TOKENS) + len(text)
    unknown = char_tokenizer.encode("a\u00e9b", add_special_tokens=False)
    assert unknown[1] == char_tokenizer.convert_tokens_to_ids("<|unk|>") and len(unknown) == 3
    assert char_tokenizer.pad_token == "<|pad|>" and char_tokenizer.eos_token == "<|im_end|>"


def test_a_charset_limits_the_vocabulary() -> None:
    tokenizer = build_char_tokenizer("abc")
    assert len(tokenizer) == len(SPECIAL_TOKENS) + 3
    ids = tokenizer.encode("abcd", add_special_tokens=False)
    assert ids[:3] == [len(SPECIAL_TOKENS) + i for i in range(3)] and ids[3] == tokenizer.unk_token_id


def test_the_chat_template_is_chatml(char_tokenizer) -> None:
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}]
    rendered = char_tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert rendered == "<|im_start|>system\ns<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"


def test_bpe_tokenizer_is_deterministic_and_encodes_any_text() -> None:
    first, second = build_bpe_tokenizer(vocab_size=300, corpus=CORPUS), build_bpe_tokenizer(300, corpus=CORPUS)
    assert first.get_vocab() == second.get_vocab() and len(first) <= 300
    for text in ["never seen: \u00fc\u00df \U0001f680 <tag>", *CORPUS]:
        ids = first.encode(text, add_special_tokens=False)
        assert first.decode(ids) == text
    common = first.encode("tl.load(x_ptr + offsets, mask=mask)\n", add_special_tokens=False)
    assert len(common) < len("tl.load(x_ptr + offsets, mask=mask)\n")  # merges learnt from the corpus
    with pytest.raises(ValueError, match="corpus is empty"):
        build_bpe_tokenizer(corpus=[])


def test_random_models_are_seeded_and_sized_from_the_tokenizer(char_tokenizer) -> None:
    a = build_random_causal_lm(SMALL, tokenizer=char_tokenizer, seed=5)
    b = build_random_causal_lm(SMALL, tokenizer=char_tokenizer, seed=5)
    c = build_random_causal_lm(SMALL, tokenizer=char_tokenizer, seed=6)
    assert a.config.vocab_size == len(char_tokenizer) and a.config.eos_token_id == char_tokenizer.eos_token_id
    weights = [dict(m.named_parameters()) for m in (a, b, c)]
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])
    assert not all(torch.equal(weights[0][k], weights[2][k]) for k in weights[0])
    llama = build_random_causal_lm({**SMALL, "architecture": "llama"}, vocab_size=200, tokenizer=char_tokenizer)
    assert llama.config.model_type == "llama" and llama.config.vocab_size == 200


def test_random_model_misuse_is_refused(char_tokenizer) -> None:
    with pytest.raises(ValueError, match="architecture must be one of"):
        build_random_causal_lm({**SMALL, "architecture": "gpt2"}, tokenizer=char_tokenizer)
    with pytest.raises(ValueError, match="smaller than the tokenizer's"):
        build_random_causal_lm(SMALL, vocab_size=10, tokenizer=char_tokenizer)
    with pytest.raises(ValueError, match="give vocab_size"):
        build_random_causal_lm(SMALL)


def test_a_saved_model_and_tokenizer_load_back_unchanged(char_tokenizer, tmp_path) -> None:
    model = build_random_causal_lm(SMALL, tokenizer=char_tokenizer, seed=1)
    path = save_local_model(model, char_tokenizer, tmp_path / "m")
    loaded = load_tokenizer(path)
    text = "x = tl.load(ptr)\n"
    assert loaded.encode(text, add_special_tokens=False) == char_tokenizer.encode(text, add_special_tokens=False)
    assert loaded.eos_token == "<|im_end|>" and loaded.chat_template == char_tokenizer.chat_template
    assert (path / "config.json").is_file()
