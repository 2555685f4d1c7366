"""Pull the candidate's code out of a model answer.

The contract with the policy is: put the whole solution in one fenced code block. Models are
sloppy about the details, so :func:`extract_code` accepts the common variants:

* any of the tags ``python``, ``py``, ``python3``, ``Python3``, ``py3`` or no tag at all;
* CRLF or CR line endings;
* an unterminated final fence (the block runs to the end of the answer, as happens when a
  generation hits its token limit);
* a closing fence glued to the last code line (``return out```)``;
* ``~~~`` fences and fences indented by a few spaces.

When the answer holds several blocks, the *last* Python-like (or untagged) block wins, since
models often show a snippet first and the final solution last. A block with another tag (say
``bash``) is only used when no Python-like block exists and it mentions ``ModelNew``.
"""

from __future__ import annotations

import re

__all__ = ["PYTHON_TAGS", "CodeBlock", "extract_code", "find_code_blocks"]

#: Language tags (lower-cased) treated as Python.
PYTHON_TAGS = frozenset({"", "python", "py", "python3", "py3", "python 3", "ipython", "pycon"})

_FENCE_RE = re.compile(r"^[ \t]{0,3}(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`]*?)[ \t]*$")


class CodeBlock:
    """One fenced block: its (lower-cased) language tag, its text and whether it was closed."""

    __slots__ = ("closed", "code", "tag")

    def __init__(self, tag: str, code: str, closed: bool) -> None:
        self.tag = tag
        self.code = code
        self.closed = closed

    @property
    def is_python(self) -> bool:
        return self.tag in PYTHON_TAGS

    def __repr__(self) -> str:
        return f"CodeBlock(tag={self.tag!r}, closed={self.closed}, chars={len(self.code)})"


def _normalise_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _tag(info: str) -> str:
    """Lower-cased language tag; ``"python title=x.py"`` -> ``"python"``."""
    tag = info.strip().lower()
    return tag.split()[0] if tag and tag != "python 3" else tag


def find_code_blocks(text: str) -> list[CodeBlock]:
    """All fenced blocks of ``text`` in order (the last one may be unterminated)."""
    if not text:
        return []
    blocks: list[CodeBlock] = []
    fence: str | None = None
    tag = ""
    body: list[str] = []
    for line in _normalise_newlines(text).split("\n"):
        if fence is None:
            match = _FENCE_RE.match(line)
            if match:
                fence = match.group("fence")
                tag = _tag(match.group("info"))
                body = []
            continue
        stripped = line.strip()
        if stripped and stripped[0] == fence[0] and set(stripped) == {fence[0]} and len(stripped) >= len(fence):
            blocks.append(CodeBlock(tag, "\n".join(body), closed=True))
            fence = None
            continue
        reopen = _FENCE_RE.match(line)
        if reopen and reopen.group("info").strip():
            # a new tagged fence while a block is open: the model forgot to close the previous one
            blocks.append(CodeBlock(tag, "\n".join(body), closed=False))
            fence = reopen.group("fence")
            tag = _tag(reopen.group("info"))
            body = []
            continue
        if fence[0] == "`" and stripped.endswith(fence) and not stripped.startswith(fence):
            # closing fence glued to the last line of code: "return out```"
            body.append(line.rstrip()[: -len(fence)].rstrip())
            blocks.append(CodeBlock(tag, "\n".join(body), closed=True))
            fence = None
            continue
        body.append(line)
    if fence is not None:
        blocks.append(CodeBlock(tag, "\n".join(body), closed=False))
    return blocks


def extract_code(text: str | None) -> str | None:
    """The solution code in a model answer, or ``None`` when there is no usable fenced block.

    Args:
        text: the model's answer (any string; ``None`` is treated as empty).

    Returns:
        The code of the last Python-like or untagged block (stripped of surrounding blank lines,
        ending with one newline); failing that, the last block of another language that mentions
        ``ModelNew``; ``None`` when neither exists or the chosen blocks are empty.
    """
    if not text or not isinstance(text, str):
        return None
    blocks = [b for b in find_code_blocks(text) if b.code.strip()]
    chosen = next((b for b in reversed(blocks) if b.is_python), None)
    if chosen is None:
        chosen = next((b for b in reversed(blocks) if "ModelNew" in b.code), None)
    if chosen is None:
        return None
    return chosen.code.strip("\n") + "\n"
