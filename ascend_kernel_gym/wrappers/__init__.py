"""Wrappers: context compaction, knowledge-base tips, and adapters for external RL libraries.

Names resolve lazily so that ``import ascend_kernel_gym.wrappers`` stays light.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "CompactionWrapper": "ascend_kernel_gym.wrappers.compaction",
    "KBRetrievalWrapper": "ascend_kernel_gym.wrappers.kb_retrieval",
    "KernelChoiceEnv": "ascend_kernel_gym.wrappers.sb3",
    "kernel_variants": "ascend_kernel_gym.wrappers.sb3",
    "AscendTritonToolEnv": "ascend_kernel_gym.wrappers.trl",
    "TRLEnvConfig": "ascend_kernel_gym.wrappers.trl",
    "build_trl_dataset": "ascend_kernel_gym.wrappers.trl",
    "make_environment_factory": "ascend_kernel_gym.wrappers.trl",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
