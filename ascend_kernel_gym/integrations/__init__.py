"""Adapters that plug the environment into other libraries (Stable-Baselines3, TRL).

Names resolve lazily, so importing this package imports none of those libraries.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "KernelChoiceEnv": "ascend_kernel_gym.integrations.sb3",
    "AscendTritonToolEnv": "ascend_kernel_gym.integrations.trl",
    "TRLEnvConfig": "ascend_kernel_gym.integrations.trl",
    "build_trl_dataset": "ascend_kernel_gym.integrations.trl",
    "make_environment_factory": "ascend_kernel_gym.integrations.trl",
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
