"""Text helpers for the env's ``Text`` spaces: the charset, sanitising, rendering and clipping.

Every observation the env returns is built by :func:`render_context`: chat messages are
rendered as one text, mapped onto :data:`CHARSET` (so ``obs in observation_space`` holds for
any model output, unicode included) and clipped to a character budget by keeping the head (the
system message and the task prompt) and the tail (the latest turns) with a one-line note that
says how much was left out in between.
"""

from __future__ import annotations

import string
import unicodedata
from collections.abc import Iterable, Mapping

__all__ = [
    "CHARSET",
    "ELISION_TEMPLATE",
    "MIN_OBS_CHARS",
    "clip_text",
    "render_context",
    "render_messages",
    "sanitize",
]

#: Printable ASCII: letters, digits, punctuation, space, newline and tab.
CHARSET: str = string.ascii_letters + string.digits + string.punctuation + " \n\t"
_CHARSET_SET = frozenset(CHARSET)

#: Smallest ``max_obs_chars`` the env accepts (the clipping note and a useful head must fit).
MIN_OBS_CHARS = 1024

#: The note that replaces the elided middle of a clipped context.
ELISION_TEMPLATE = "\n[... {n} characters of earlier conversation elided to fit the {limit}-character limit ...]\n"

# ASCII stand-ins for characters models commonly emit (checked before Unicode decomposition).
_ASCII_MAP: dict[str, str] = {
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'",
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"',
    "\u00ab": '"', "\u00bb": '"',
    "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "--", "\u2015": "--", "\u2212": "-",
    "\u2026": "...", "\u2022": "*", "\u00b7": "*", "\u25cf": "*",
    "\u00a0": " ", "\u2002": " ", "\u2003": " ", "\u2009": " ", "\u200a": " ", "\u202f": " ", "\u3000": " ",
    "\u200b": "", "\u200c": "", "\u200d": "", "\ufeff": "",
    "\u2192": "->", "\u2190": "<-", "\u21d2": "=>", "\u2194": "<->",
    "\u2264": "<=", "\u2265": ">=", "\u2260": "!=", "\u2248": "~=", "\u00b1": "+/-",
    "\u00d7": "x", "\u00f7": "/", "\u2217": "*", "\u221a": "sqrt", "\u221e": "inf",
    "\u00b5": "u", "\u03bc": "u", "\u00b0": " deg",
    "\u2713": "[ok]", "\u2714": "[ok]", "\u2717": "[x]", "\u2718": "[x]",
    "\u00a9": "(c)", "\u00ae": "(R)", "\u2122": "(TM)",
    "\r": "\n", "\x0b": "\n", "\x0c": "\n",
}  # fmt: skip


def _ascii_for(char: str) -> str:
    mapped = _ASCII_MAP.get(char)
    if mapped is not None:
        return mapped
    decomposed = unicodedata.normalize("NFKD", char)
    ascii_part = "".join(c for c in decomposed if c in _CHARSET_SET)
    return ascii_part if ascii_part else "?"


def sanitize(text: str) -> str:
    """Map ``text`` onto :data:`CHARSET`.

    CRLF and CR become ``\\n``; common typographic characters get ASCII stand-ins (curly quotes,
    dashes, arrows, ``<=``...); accented letters lose their accents; anything else becomes ``?``.
    The result only holds characters of :data:`CHARSET`.
    """
    if not isinstance(text, str):
        text = str(text)
    text = text.replace("\r\n", "\n")
    if text.isascii() and all(c in _CHARSET_SET for c in text):
        return text
    return "".join(c if c in _CHARSET_SET else _ascii_for(c) for c in text)


def render_messages(messages: Iterable[Mapping[str, str]]) -> str:
    """Chat messages as one text: a ``### <role>`` header line, then the content, per message."""
    parts = [f"### {m.get('role', 'user')!s}\n{m.get('content', '')}" for m in messages]
    return "\n\n".join(parts)


def clip_text(head: str, tail: str, max_chars: int) -> str:
    """Join ``head`` and ``tail``, eliding the middle so the result has at most ``max_chars`` characters.

    The head (system message and task prompt) is kept whole when it takes at most half the
    budget, else its start is kept; the tail keeps its *end* (the latest turns). A note in
    between says how many characters were left out.
    """
    if max_chars < MIN_OBS_CHARS:
        raise ValueError(f"max_chars must be at least {MIN_OBS_CHARS}, got {max_chars}")
    whole = head + tail
    if len(whole) <= max_chars:
        return whole
    # Reserve room for the note with the largest number it could need.
    note_room = len(ELISION_TEMPLATE.format(n=len(whole), limit=max_chars))
    head_keep = min(len(head), (max_chars - note_room) // 2)
    tail_keep = max_chars - note_room - head_keep
    tail_keep = min(tail_keep, len(tail))
    elided = len(whole) - head_keep - tail_keep
    note = ELISION_TEMPLATE.format(n=elided, limit=max_chars)
    clipped = head[:head_keep] + note + (tail[len(tail) - tail_keep :] if tail_keep else "")
    return clipped[:max_chars]


def render_context(messages: list[Mapping[str, str]], max_chars: int, head_messages: int = 2) -> str:
    """The observation text of a chat: rendered, sanitised, clipped to ``max_chars``.

    Args:
        messages: ``{"role", "content"}`` dicts (system, task prompt, then turns).
        max_chars: the character budget (the observation space's ``max_length``).
        head_messages: how many leading messages form the protected head.
    """
    head = sanitize(render_messages(messages[:head_messages]))
    rest = messages[head_messages:]
    tail = sanitize("\n\n" + render_messages(rest)) if rest else ""
    return clip_text(head, tail, max_chars)
