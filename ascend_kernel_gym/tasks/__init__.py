"""Tasks: the model, the loader, the bundled suites and kernel variants of reference solutions.

    from ascend_kernel_gym.tasks import get_task, load_suite
    task = get_task("core/L1/relu")
    train = load_suite("core", split="train")

Names resolve lazily; importing this package imports neither torch nor triton.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Task": "ascend_kernel_gym.tasks.task",
    "TaskLoadError": "ascend_kernel_gym.tasks.task",
    "UnknownTaskError": "ascend_kernel_gym.tasks.task",
    "load_task_file": "ascend_kernel_gym.tasks.task",
    "load_task_source": "ascend_kernel_gym.tasks.task",
    "ShapeCase": "ascend_kernel_gym.tasks.cases",
    "bundled_suites": "ascend_kernel_gym.tasks.suite",
    "get_task": "ascend_kernel_gym.tasks.suite",
    "load_suite": "ascend_kernel_gym.tasks.suite",
    "KernelVariant": "ascend_kernel_gym.tasks.variants",
    "kernel_variants": "ascend_kernel_gym.tasks.variants",
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
