"""Hybrid retrieval over the knowledge base: trigger hits first, then dense top-k.

1. Every entry's trigger regexes are matched (case-insensitively) against the error text
   (``trigger_text``, by default the query itself). Entries with a hit come first, ordered by
   the length of the longest text a trigger matched (a long literal error message is more
   specific than a short keyword), then by dense similarity. Triggers on the evaluator's typed
   error (``error_type: <value>``) count as the least specific.
2. Caller-supplied ``extra`` entries come next (the KB wrapper passes the entries named by the
   evaluator's Ascend rule findings, ``why = "ascend_check: <rule>"``).
3. The remaining slots are filled by dense similarity (cosine, sentence-transformers + faiss),
   optionally above ``min_score``.

Each :class:`Hit` says why it was returned: ``"trigger: <regex>"``, the caller's reason, or ``"dense"``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ascend_kernel_gym.kb_index.store import Entry, TriggerMatch, load_entries

__all__ = ["KB", "Hit", "KnowledgeBase"]


@dataclass(frozen=True)
class Hit:
    """One retrieved entry.

    Attributes:
        id: entry id.
        score: cosine similarity of the query to the entry (``None`` when dense scoring was off).
        why: ``"trigger: <regex>"`` or ``"dense"``.
        entry: the entry itself.
    """

    id: str
    score: float | None
    why: str
    entry: Entry

    def to_dict(self) -> dict[str, Any]:
        """``{"id", "score", "why"}`` (JSON-serialisable; what goes into ``info["kb"]["hits"]``)."""
        return {"id": self.id, "score": None if self.score is None else round(self.score, 4), "why": self.why}


class KnowledgeBase:
    """The Ascend knowledge base: entries plus hybrid retrieval.

    Args:
        extra_dirs: user directories of entry files (``*.md`` with front matter), added to the
            bundled entries. An id defined twice is an error.
        model: ``None`` for the bundled all-MiniLM-L6-v2, or a local sentence-transformers directory.
        cache_dir: where the dense index is cached (default ``$AKG_CACHE_DIR/kb`` or
            ``~/.cache/ascend_kernel_gym/kb``).
        include_bundled: load the entries shipped with the package.
        device: torch device of the encoder.

    Loading entries is cheap and happens here; the embedding model and the index are loaded
    on the first dense search or :meth:`build`.
    """

    def __init__(
        self,
        extra_dirs: Iterable[str | Path] = (),
        model: str | Path | None = None,
        cache_dir: str | Path | None = None,
        include_bundled: bool = True,
        device: str = "cpu",
    ) -> None:
        if isinstance(extra_dirs, (str, Path)):
            raise TypeError("extra_dirs must be a list of directories, not a single path")
        self.entries: list[Entry] = load_entries(extra_dirs, include_bundled=include_bundled)
        if not self.entries:
            raise ValueError("the knowledge base has no entries (include_bundled=False and no extra_dirs entries)")
        self._by_id = {e.id: e for e in self.entries}
        self.model = model
        self.cache_dir = cache_dir
        self.device = device
        self._index: Any = None

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, entry_id: object) -> bool:
        return entry_id in self._by_id

    def get(self, entry_id: str) -> Entry:
        """The entry with this id.

        Raises:
            KeyError: no such entry.
        """
        try:
            return self._by_id[entry_id]
        except KeyError:
            raise KeyError(f"no knowledge-base entry with id {entry_id!r}") from None

    @property
    def index(self) -> Any:
        """The :class:`~ascend_kernel_gym.kb_index.index.DenseIndex` (created on first use)."""
        if self._index is None:
            from ascend_kernel_gym.kb_index.index import DenseIndex

            self._index = DenseIndex(self.entries, model=self.model, cache_dir=self.cache_dir, device=self.device)
        return self._index

    def build(self, progress: bool = False, force: bool = False) -> Any:
        """Load or build the dense index; returns its :class:`~ascend_kernel_gym.kb_index.index.BuildStats`."""
        return self.index.ensure_built(progress=progress, force=force)

    def trigger_hits(self, text: str) -> list[tuple[Entry, TriggerMatch]]:
        """Entries whose triggers match ``text``, each with its most specific match, in id order."""
        hits = []
        for entry in self.entries:
            matches = entry.match_triggers(text)
            if matches:
                hits.append((entry, max(matches, key=lambda m: m.specificity)))
        return hits

    def search(
        self,
        query: str,
        k: int = 3,
        trigger_text: str | None = None,
        exclude: Iterable[str] = (),
        min_score: float | None = None,
        dense: bool = True,
        exclude_tags: Iterable[str] = (),
        extra: Sequence[tuple[str, str]] = (),
    ) -> list[Hit]:
        """Retrieve up to ``k`` entries: trigger hits first, then dense results.

        Args:
            query: text to embed for dense retrieval (task description, feedback, a question).
            k: maximum number of hits.
            trigger_text: text the trigger regexes run on; ``None`` uses ``query``.
            exclude: entry ids never to return (e.g. tips shown recently).
            min_score: drop dense-only results below this cosine similarity (triggers are kept).
            dense: ``False`` skips the embedding model entirely (trigger hits only; scores are ``None``).
            exclude_tags: dense-only results carrying any of these tags are skipped (trigger hits are kept).
            extra: ``(entry id, why)`` pairs that rank after the trigger hits and before the dense
                results, e.g. the entries named by the evaluator's Ascend rule findings; ids not in
                the knowledge base are skipped.

        Raises:
            ValueError: ``k`` < 1 or an empty query.
        """
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        if not isinstance(query, str) or not query.strip():
            raise ValueError("query must be a non-empty string")
        excluded = set(exclude)
        skip_tags = set(exclude_tags)
        text = query if trigger_text is None else trigger_text
        scores: dict[str, float] = self.index.scores(query) if dense else {}
        triggered = [(e, m) for e, m in self.trigger_hits(text) if e.id not in excluded]
        triggered.sort(key=lambda em: (-em[1].specificity, -scores.get(em[0].id, 0.0), em[0].id))
        hits = [Hit(e.id, scores.get(e.id), f"trigger: {m.pattern}", e) for e, m in triggered[:k]]
        for entry_id, why in extra:
            if len(hits) >= k:
                break
            if entry_id in self._by_id and entry_id not in excluded and entry_id not in {h.id for h in hits}:
                hits.append(Hit(entry_id, scores.get(entry_id), why, self._by_id[entry_id]))
        if dense and len(hits) < k:
            taken = excluded | {h.id for h in hits}
            for entry_id, score in sorted(scores.items(), key=lambda kv: -kv[1]):
                if len(hits) >= k:
                    break
                if entry_id in taken or (min_score is not None and score < min_score):
                    continue
                if skip_tags and skip_tags.intersection(self._by_id[entry_id].tags):
                    continue
                hits.append(Hit(entry_id, score, "dense", self._by_id[entry_id]))
        return hits

    def search_many(self, queries: Sequence[str], k: int = 3) -> list[list[Hit]]:
        """:meth:`search` for each query (same options as the defaults)."""
        return [self.search(q, k=k) for q in queries]


#: Short alias.
KB = KnowledgeBase
