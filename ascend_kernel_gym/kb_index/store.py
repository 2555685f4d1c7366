"""Knowledge-base entries: parsing, validation and loading.

An entry is a Markdown file with YAML front matter::

    ---
    id: ub-overflow-compile-error
    title: 'UB overflow: "ub overflow, requires X bits ..."'
    tags: [memory, ub, compile-error]
    triggers:
      - 'ub overflow'
      - 'requires \\d+ bits while \\d+ bits available'
    source: TA PG
    version: optional note on which versions the advice applies to
    ---
    Three to eight sentences of advice.

``id`` must equal the file name without ``.md``. ``triggers`` are Python regular expressions
matched case-insensitively against error text (a trigger hit puts the entry before dense
results). Anything malformed raises :class:`EntryError` naming the file.

This module imports only :mod:`yaml`, :mod:`re` and the standard library.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

__all__ = [
    "BUNDLED_ENTRIES_DIR",
    "Entry",
    "EntryError",
    "TriggerMatch",
    "entries_fingerprint",
    "load_entries",
    "parse_entry",
]

#: Entries shipped with the package.
BUNDLED_ENTRIES_DIR = Path(__file__).resolve().parent / "entries"

REQUIRED_KEYS = ("id", "title", "tags", "source")
OPTIONAL_KEYS = ("triggers", "version")
ALLOWED_KEYS = frozenset(REQUIRED_KEYS + OPTIONAL_KEYS)
ID_RE = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
#: Triggers starting with this prefix match the evaluator's typed error, which the KB wrapper appends
#: to the error text as ``error_type: <value>``; they rank after triggers on the message itself.
TYPED_ERROR_PREFIX = "error_type:"
#: Flags every trigger is compiled with.
TRIGGER_FLAGS = re.IGNORECASE | re.MULTILINE
_FRONT_MATTER_RE = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*\r?\n(.*)\Z", re.DOTALL)


class EntryError(ValueError):
    """An entry file is malformed; the message starts with the file path."""


@dataclass(frozen=True)
class TriggerMatch:
    """One trigger of one entry that matched a text."""

    pattern: str
    matched: str

    @property
    def generic(self) -> bool:
        """A trigger on the evaluator's typed error (``error_type: <value>``) rather than on message text."""
        return self.pattern.startswith(TYPED_ERROR_PREFIX)

    @property
    def specificity(self) -> int:
        """Length of the matched text (capped); typed-error triggers rank below message triggers."""
        return 0 if self.generic else min(len(self.matched), 80)


@dataclass(frozen=True)
class Entry:
    """One knowledge-base entry.

    Attributes:
        id: unique id, equal to the file stem.
        title: one-line title.
        tags: topic labels (``grid``, ``ub``, ``dot`` ...).
        triggers: regular expressions (source text) matched against error text.
        source: where the fact comes from (source key such as ``TA PG``).
        body: the advice text.
        version: optional note on the versions the advice applies to.
        path: the file it was loaded from.
    """

    id: str
    title: str
    tags: tuple[str, ...]
    triggers: tuple[str, ...]
    source: str
    body: str
    version: str | None = None
    path: str = ""
    _compiled: tuple[re.Pattern[str], ...] = field(default=(), repr=False, compare=False)

    def match_triggers(self, text: str) -> list[TriggerMatch]:
        """The triggers of this entry that match ``text`` (case-insensitive), in declaration order."""
        hits = []
        for pattern in self._compiled:
            m = pattern.search(text)
            if m is not None:
                hits.append(TriggerMatch(pattern=pattern.pattern, matched=m.group(0)))
        return hits

    def embedding_text(self) -> str:
        """The text the dense index embeds for this entry."""
        return f"{self.title}. Topics: {', '.join(self.tags)}. {self.body}"

    def content_hash(self) -> str:
        """A hash of everything that affects retrieval (not the path)."""
        payload = "\x1f".join(
            [self.id, self.title, ",".join(self.tags), "\x1e".join(self.triggers), self.source, self.body]
        )
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

    def short(self, max_chars: int = 400) -> str:
        """Title plus body, trimmed at a sentence boundary to at most ``max_chars`` characters."""
        text = " ".join(self.body.split())
        if len(text) > max_chars:
            cut = text[:max_chars]
            dot = cut.rfind(". ")
            text = cut[: dot + 1] if dot > max_chars // 3 else cut.rstrip() + " ..."
        return f"{self.title}: {text}"

    def to_dict(self) -> dict[str, object]:
        """JSON-serialisable form (for ``akg kb list --json``)."""
        return {
            "id": self.id,
            "title": self.title,
            "tags": list(self.tags),
            "triggers": list(self.triggers),
            "source": self.source,
            "version": self.version,
            "path": self.path,
            "body": self.body,
        }


def _as_str_list(value: object, key: str, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise EntryError(f"{where}: '{key}' must be a list of non-empty strings, got {value!r}")
    return tuple(v.strip() if key != "triggers" else v for v in value)


def parse_entry(text: str, path: str | Path = "<string>") -> Entry:
    """Parse and validate one entry file's text.

    Args:
        text: the whole file.
        path: used in error messages and to check that ``id`` equals the file stem
            (skipped for ``"<string>"``).

    Raises:
        EntryError: missing or unknown keys, wrong types, bad regular expressions, empty body,
            or an id that does not match the file name.
    """
    where = str(path)
    m = _FRONT_MATTER_RE.match(text)
    if m is None:
        raise EntryError(f"{where}: missing front matter (the file must start with '---', YAML, then '---')")
    try:
        meta = yaml.safe_load(m.group(1))
    except yaml.YAMLError as exc:
        raise EntryError(f"{where}: front matter is not valid YAML: {exc}") from None
    if not isinstance(meta, dict):
        raise EntryError(f"{where}: front matter must be a mapping, got {type(meta).__name__}")
    unknown = set(meta) - ALLOWED_KEYS
    if unknown:
        raise EntryError(f"{where}: unknown key(s) {sorted(unknown)}; allowed: {sorted(ALLOWED_KEYS)}")
    missing = [k for k in REQUIRED_KEYS if k not in meta]
    if missing:
        raise EntryError(f"{where}: missing required key(s) {missing}")
    entry_id = meta["id"]
    if not isinstance(entry_id, str) or not ID_RE.match(entry_id):
        raise EntryError(f"{where}: 'id' must match {ID_RE.pattern} (lower-case, digits, '-', '_'), got {entry_id!r}")
    if where != "<string>" and Path(where).stem != entry_id:
        raise EntryError(f"{where}: 'id' {entry_id!r} must equal the file name {Path(where).stem!r}")
    for key in ("title", "source"):
        if not isinstance(meta[key], str) or not meta[key].strip():
            raise EntryError(f"{where}: '{key}' must be a non-empty string")
    version = meta.get("version")
    if version is not None and not isinstance(version, (str, int, float)):
        raise EntryError(f"{where}: 'version' must be a string")
    tags = _as_str_list(meta["tags"], "tags", where)
    if not tags:
        raise EntryError(f"{where}: 'tags' must list at least one tag")
    triggers = _as_str_list(meta.get("triggers"), "triggers", where)
    compiled = []
    for trig in triggers:
        try:
            pattern = re.compile(trig, TRIGGER_FLAGS)
        except re.error as exc:
            raise EntryError(f"{where}: trigger {trig!r} is not a valid regular expression: {exc}") from None
        if pattern.search("") is not None:
            raise EntryError(f"{where}: trigger {trig!r} matches the empty string and would fire on every text")
        compiled.append(pattern)
    body = m.group(2).strip()
    if not body:
        raise EntryError(f"{where}: the body (advice text after the front matter) is empty")
    return Entry(
        id=entry_id,
        title=meta["title"].strip(),
        tags=tags,
        triggers=triggers,
        source=meta["source"].strip(),
        body=body,
        version=str(version) if version is not None else None,
        path="" if where == "<string>" else where,
        _compiled=tuple(compiled),
    )


def _entry_files(directory: Path) -> list[Path]:
    if not directory.is_dir():
        raise FileNotFoundError(f"knowledge-base directory {str(directory)!r} does not exist or is not a directory")
    return sorted(p for p in directory.glob("*.md") if p.is_file() and not p.name.startswith((".", "_")))


def load_entries(extra_dirs: Iterable[str | Path] = (), include_bundled: bool = True) -> list[Entry]:
    """Load the bundled entries and the entries of ``extra_dirs`` (``*.md`` files, not recursive).

    Args:
        extra_dirs: user directories of entry files, loaded after the bundled ones.
        include_bundled: load the entries shipped with the package.

    Returns:
        Entries sorted by id.

    Raises:
        EntryError: a malformed file, or the same id in two files (both paths are named).
        FileNotFoundError: a directory in ``extra_dirs`` does not exist.
    """
    dirs: list[Path] = [BUNDLED_ENTRIES_DIR] if include_bundled else []
    dirs += [Path(d).expanduser() for d in extra_dirs]
    seen: dict[str, Entry] = {}
    for directory in dirs:
        for path in _entry_files(directory):
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise EntryError(f"{path}: cannot be read: {exc}") from None
            entry = parse_entry(text, path)
            if entry.id in seen:
                raise EntryError(f"{path}: duplicate entry id {entry.id!r}, already defined in {seen[entry.id].path}")
            seen[entry.id] = entry
    return [seen[k] for k in sorted(seen)]


def entries_fingerprint(entries: Sequence[Entry], model_id: str) -> str:
    """A hash of the entries' content and the embedding model id (the index cache key)."""
    h = hashlib.sha256(model_id.encode("utf-8"))
    for entry in sorted(entries, key=lambda e: e.id):
        h.update(b"\x00" + entry.content_hash().encode("ascii"))
    return h.hexdigest()[:24]
