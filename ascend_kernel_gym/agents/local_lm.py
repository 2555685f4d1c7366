"""Tokenizers and randomly initialised causal LMs built locally, with nothing downloaded.

Used by tests, the learning check, the GPU benchmark and configs that train from scratch. Two
tokenizers, both with a ChatML chat template (``<|im_start|>role\\n...<|im_end|>\\n``):

- :func:`build_char_tokenizer`: one token per printable ASCII character (the env's charset), so
  every token decodes to text the env accepts unchanged;
- :func:`build_bpe_tokenizer`: a byte-level BPE trained in a second or two on local text (the
  bundled task files, knowledge-base entries and prompts, or any strings given).

:func:`build_random_causal_lm` builds a Hugging Face causal LM (Llama or Qwen2 architecture) from
config values with random weights; :data:`QWEN2_5_0_5B` holds the public architecture values of
Qwen2.5-0.5B (written out here, not fetched).
"""

from __future__ import annotations

import string
from collections.abc import Iterable
from pathlib import Path
from typing import Any

#: ChatML, the template of the Qwen family; generation prompt ``<|im_start|>assistant\n``.
CHATML_TEMPLATE = (
    r"{% for message in messages %}"
    r"{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    r"{% endfor %}"
    r"{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
SPECIAL_TOKENS = ("<|pad|>", "<|im_start|>", "<|im_end|>", "<|unk|>")

#: Public architecture values of Qwen2.5-0.5B (its config.json), written out: ~494M parameters.
QWEN2_5_0_5B: dict[str, Any] = {
    "architecture": "qwen2",
    "vocab_size": 151936,
    "hidden_size": 896,
    "intermediate_size": 4864,
    "num_hidden_layers": 24,
    "num_attention_heads": 14,
    "num_key_value_heads": 2,
    "max_position_embeddings": 32768,
    "rope_theta": 1000000.0,
    "rms_norm_eps": 1e-6,
    "tie_word_embeddings": True,
}

#: A model small enough to train on two CPU cores in seconds.
TINY: dict[str, Any] = {
    "architecture": "qwen2",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 4096,
    "tie_word_embeddings": True,
}


def _wrap(tokenizer_object: Any, model_max_length: int) -> Any:
    from transformers import PreTrainedTokenizerFast

    tok = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer_object,
        pad_token="<|pad|>",  # noqa: S106 - a token, not a password
        eos_token="<|im_end|>",  # noqa: S106
        unk_token="<|unk|>",  # noqa: S106
        bos_token=None,
        model_max_length=model_max_length,
        padding_side="left",
    )
    tok.add_special_tokens({"additional_special_tokens": ["<|im_start|>"]})
    tok.chat_template = CHATML_TEMPLATE
    return tok


def build_char_tokenizer(charset: str | None = None, model_max_length: int = 1 << 20) -> Any:
    """A character-level tokenizer over ``charset`` (default: printable ASCII, space, ``\\n``, ``\\t``).

    Characters outside the charset encode to ``<|unk|>``. Returns a
    ``transformers.PreTrainedTokenizerFast`` with pad ``<|pad|>``, eos ``<|im_end|>`` and a ChatML
    chat template.
    """
    from tokenizers import Tokenizer, decoders, models

    chars = charset if charset is not None else string.ascii_letters + string.digits + string.punctuation + " \n\t"
    vocab: dict[str, int] = {}
    for token in SPECIAL_TOKENS:
        vocab[token] = len(vocab)
    for ch in chars:
        vocab.setdefault(ch, len(vocab))
    tk = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<|unk|>", fuse_unk=True))  # noqa: S106
    tk.add_special_tokens(list(SPECIAL_TOKENS))
    tk.decoder = decoders.Fuse()
    return _wrap(tk, model_max_length)


def local_corpus() -> list[str]:
    """Text shipped with the package: task and solution files, knowledge-base entries, prompt templates."""
    root = Path(__file__).resolve().parents[1]
    paths = sorted((root / "tasks" / "suites").rglob("*.py"))
    paths += sorted((root / "kb_index").rglob("*.md"))
    paths += sorted((root / "envs" / "prompts").glob("*.md"))
    return [p.read_text(encoding="utf-8", errors="replace") for p in paths]


def build_bpe_tokenizer(
    vocab_size: int = 8192, corpus: Iterable[str] | None = None, model_max_length: int = 1 << 20
) -> Any:
    """A byte-level BPE tokenizer trained on local text (default: :func:`local_corpus`).

    Any text encodes (bytes fall back to single-byte tokens). Deterministic for a given corpus.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    texts = list(corpus) if corpus is not None else local_corpus()
    if not texts:
        raise ValueError("corpus is empty: give at least one text to train the BPE tokenizer on")
    tk = Tokenizer(models.BPE(unk_token=None))
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tk.train_from_iterator(texts, trainer=trainer)
    return _wrap(tk, model_max_length)


def build_random_causal_lm(
    config: dict[str, Any] | None = None, *, vocab_size: int | None = None, tokenizer: Any = None, seed: int = 0
) -> Any:
    """A causal LM with random weights from architecture values (nothing downloaded).

    Args:
        config: ``architecture`` (``qwen2`` or ``llama``) plus the config fields of that architecture
            (``hidden_size``, ``num_hidden_layers``, ...). Defaults to :data:`TINY`.
        vocab_size: overrides ``config["vocab_size"]``; defaults to ``len(tokenizer)`` when a tokenizer
            is given. The model's vocabulary must cover the tokenizer's.
        tokenizer: used for the vocabulary size and the pad / eos ids.
        seed: ``torch.manual_seed`` for the initial weights.
    """
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig, Qwen2Config

    values = dict(TINY if config is None else config)
    arch = str(values.pop("architecture", "qwen2")).lower()
    classes = {"qwen2": Qwen2Config, "llama": LlamaConfig}
    if arch not in classes:
        raise ValueError(f"architecture must be one of {sorted(classes)}, got {arch!r}")
    if vocab_size is not None:
        values["vocab_size"] = vocab_size
    elif "vocab_size" not in values:
        if tokenizer is None:
            raise ValueError("give vocab_size, config['vocab_size'] or a tokenizer")
        values["vocab_size"] = len(tokenizer)
    if tokenizer is not None:
        if len(tokenizer) > values["vocab_size"]:
            raise ValueError(f"vocab_size {values['vocab_size']} is smaller than the tokenizer's {len(tokenizer)}")
        values.setdefault("pad_token_id", tokenizer.pad_token_id)
        values.setdefault("eos_token_id", tokenizer.eos_token_id)
        values.setdefault("bos_token_id", tokenizer.eos_token_id)
    rope_theta = values.pop("rope_theta", None)
    cfg = classes[arch](**values)
    if rope_theta is not None:
        # transformers >= 5 keeps it in rope_parameters, older versions in rope_theta.
        if isinstance(getattr(cfg, "rope_parameters", None), dict):
            cfg.rope_parameters["rope_theta"] = rope_theta
        else:
            cfg.rope_theta = rope_theta
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(cfg)
    return model


def load_tokenizer(path: str | Path) -> Any:
    """Load a tokenizer from a local directory (nothing downloaded).

    A generic fast tokenizer (as :func:`build_char_tokenizer` / :func:`build_bpe_tokenizer` save) is
    loaded as exactly that: ``AutoTokenizer`` would pick the class of the model type in
    ``config.json`` and, in transformers >= 5, rebuild its pre-tokenizer.
    """
    import json

    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    directory = Path(path).expanduser()
    config_file = directory / "tokenizer_config.json"
    if config_file.is_file():
        try:
            tokenizer_class = json.loads(config_file.read_text(encoding="utf-8")).get("tokenizer_class")
        except (OSError, ValueError):
            tokenizer_class = None
        if tokenizer_class in ("TokenizersBackend", "PreTrainedTokenizerFast"):
            return PreTrainedTokenizerFast.from_pretrained(str(directory), local_files_only=True)
    return AutoTokenizer.from_pretrained(str(directory), local_files_only=True)


def save_local_model(model: Any, tokenizer: Any, path: str | Path) -> Path:
    """Save a model and tokenizer so that ``HFPolicy(path)`` loads them back."""
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out
