"""The Ascend knowledge base: entry files, a dense index, hybrid retrieval and the ``akg kb`` CLI.

Importing this package imports neither torch nor sentence-transformers (names resolve lazily);
the embedding model is loaded on the first dense search or build.

    from ascend_kernel_gym.kb_index import KnowledgeBase
    kb = KnowledgeBase(extra_dirs=["my_tips/"])
    for hit in kb.search("ub overflow, requires 3145728 bits while 1572864 bits available", k=3):
        print(hit.id, hit.score, hit.why)
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "KB": "ascend_kernel_gym.kb_index.retrieval",
    "Hit": "ascend_kernel_gym.kb_index.retrieval",
    "KnowledgeBase": "ascend_kernel_gym.kb_index.retrieval",
    "BUNDLED_ENTRIES_DIR": "ascend_kernel_gym.kb_index.store",
    "Entry": "ascend_kernel_gym.kb_index.store",
    "EntryError": "ascend_kernel_gym.kb_index.store",
    "load_entries": "ascend_kernel_gym.kb_index.store",
    "parse_entry": "ascend_kernel_gym.kb_index.store",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
