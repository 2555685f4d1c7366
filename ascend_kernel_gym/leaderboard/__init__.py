"""Leaderboard: the evaluation runner (``akg eval``), metrics and reports (``akg report``), verifiable
submissions (``akg submit`` / ``akg verify``) and the static leaderboard site (``akg leaderboard``).

Nothing here is imported by ``import ascend_kernel_gym``; names resolve lazily, and the modules
import torch only inside functions that need a backend.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "EvalConfig": "ascend_kernel_gym.leaderboard.runner",
    "RunSummary": "ascend_kernel_gym.leaderboard.runner",
    "run_eval": "ascend_kernel_gym.leaderboard.runner",
    "build_policy": "ascend_kernel_gym.leaderboard.agents",
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
