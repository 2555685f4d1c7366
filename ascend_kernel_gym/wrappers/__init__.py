"""Gymnasium wrappers (context compaction, knowledge-base tips, kernel choice) and the one stack builder.

:func:`build_stack` puts the wrappers on in their one order (inside out: kernel choice,
compaction, knowledge base; see :mod:`ascend_kernel_gym.wrappers.stack`). Names resolve lazily
so that ``import ascend_kernel_gym.wrappers`` stays light.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "CompactionWrapper": "ascend_kernel_gym.wrappers.compaction",
    "KBRetrievalWrapper": "ascend_kernel_gym.wrappers.kb_retrieval",
    "KernelChoice": "ascend_kernel_gym.wrappers.choice",
    "KernelChoiceWrapper": "ascend_kernel_gym.wrappers.choice",
    "ATRL_DEFAULTS": "ascend_kernel_gym.wrappers.stack",
    "STACK_ORDER": "ascend_kernel_gym.wrappers.stack",
    "build_stack": "ascend_kernel_gym.wrappers.stack",
    "make_atrl_env": "ascend_kernel_gym.wrappers.stack",
    "wrapper_chain": "ascend_kernel_gym.wrappers.stack",
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
