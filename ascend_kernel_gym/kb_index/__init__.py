"""The Ascend knowledge base: entry files, a dense index, hybrid retrieval and the ``akg kb`` CLI.

Importing this package imports neither torch nor sentence-transformers; the embedding model is
loaded on the first dense search or build.

    from ascend_kernel_gym.kb_index import KnowledgeBase
    kb = KnowledgeBase(extra_dirs=["my_tips/"])
    for hit in kb.search("ub overflow, requires 3145728 bits while 1572864 bits available", k=3):
        print(hit.id, hit.score, hit.why)
"""

from __future__ import annotations

from ascend_kernel_gym.kb_index.retrieval import KB, Hit, KnowledgeBase
from ascend_kernel_gym.kb_index.store import BUNDLED_ENTRIES_DIR, Entry, EntryError, load_entries, parse_entry

__all__ = ["BUNDLED_ENTRIES_DIR", "KB", "Entry", "EntryError", "Hit", "KnowledgeBase", "load_entries", "parse_entry"]
