"""Device backends: which ones are available, what device they run on, and how to pick one.

Detection looks at installed packages first (cheap, no import) and only imports torch when a
device backend's package is present, so ``available_backends()`` is safe to call anywhere.
"""

from ascend_kernel_gym.backends.detect import (
    BACKENDS,
    BackendUnavailableError,
    DeviceInfo,
    available_backends,
    device_info,
    resolve_backend,
)

__all__ = ["BACKENDS", "BackendUnavailableError", "DeviceInfo", "available_backends", "device_info", "resolve_backend"]
