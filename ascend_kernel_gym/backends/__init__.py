"""Device backends: which ones are available, what device they run on, and how to pick one.

Detection looks at installed packages first (cheap, no import) and only imports torch when a
device backend's package is present, so ``available_backends()`` is safe to call anywhere.
Names resolve lazily.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "BACKENDS": "ascend_kernel_gym.backends.detect",
    "BackendUnavailableError": "ascend_kernel_gym.backends.detect",
    "DeviceInfo": "ascend_kernel_gym.backends.detect",
    "available_backends": "ascend_kernel_gym.backends.detect",
    "device_info": "ascend_kernel_gym.backends.detect",
    "resolve_backend": "ascend_kernel_gym.backends.detect",
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
