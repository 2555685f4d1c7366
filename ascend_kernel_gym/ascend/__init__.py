"""Everything about Ascend chips and triton-ascend: chip profiles, rule checks, the cost model.

Depends on nothing in ``evaluation/`` but its plain data types. Names resolve lazily.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "ChipProfile": "ascend_kernel_gym.ascend.chips",
    "list_chips": "ascend_kernel_gym.ascend.chips",
    "load_chip": "ascend_kernel_gym.ascend.chips",
    "resolve_chip": "ascend_kernel_gym.ascend.chips",
    "run_ascend_checks": "ascend_kernel_gym.ascend.checks",
    "format_ascend_report": "ascend_kernel_gym.ascend.checks",
    "capture_launches": "ascend_kernel_gym.ascend.checks",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
