"""How a CUDA child waits for the device: asleep, except while it times.

By default a CUDA context whose process has fewer contexts than the machine has cores *spins* on
a core while it waits for the device (a synchronize, a copy to the host). One worker's child
waits briefly. With several workers on a device, the device runs the children's work in turns,
and each child waiting for its turn kept a core busy doing nothing. On an H100 host with 16 cores
and eight workers (2026-12-06, docs/scaling.md) blocking cut the candidates' children's CPU time
per burst from 118-124 s to 86-88 s and the judges' from 41-44 s to 8-12 s, with the bursts as
long and every speedup as before: it leaves cores to whatever else shares the host.

So a child's context is made with *blocking sync* (the waiting thread sleeps until the device
signals it), and the timing stage switches its own context to spinning for the timed rounds
(:func:`spinning`), where how soon the host sees a call end decides how soon the next one is
launched. Switching a live context's flags needs ``cuCtxSetFlags`` (CUDA 12.1 drivers and
later): where the driver lacks it nothing changes (the context spins throughout, as before).
``AKG_CUDA_SYNC=spin`` keeps the default everywhere; unset or ``blocking``: as above.

Only the harness calls this, in the child before its context exists (:func:`before_context`,
from :func:`.process.init_device`), and around the timed rounds.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from collections.abc import Iterator

#: ``AKG_CUDA_SYNC``: ``blocking`` (default) or ``spin``
ENV = "AKG_CUDA_SYNC"
MODES = ("blocking", "spin")
#: CUDA driver API context flags (cuda.h)
CU_CTX_SCHED_SPIN = 0x01
CU_CTX_SCHED_BLOCKING_SYNC = 0x04

#: the zygote's setting (:func:`configure`); its children, forked from it, inherit it
_configured: str | None = None
#: this process's driver library once its context was made to block, else None
_driver: ctypes.CDLL | None = None
#: what this process's context does while waiting (shown in the timing details)
_state = "not set"


def _checked(setting: str) -> str:
    """``setting`` normalised (empty: unset); raises ``ValueError`` on an unknown mode."""
    value = setting.strip().lower()
    if value and value not in MODES:
        raise ValueError(f"{ENV} must be one of {', '.join(MODES)} (or unset), got {setting!r}")
    return value


def configure(setting: str) -> None:
    """The zygote's ``AKG_CUDA_SYNC`` value (empty: the default); raises ``ValueError`` on another."""
    global _configured
    _configured = _checked(setting) or None


def setting_from_env() -> str:
    """``AKG_CUDA_SYNC`` as the pool passes it to its zygote; raises ``ValueError`` on an unknown mode."""
    return _checked(os.environ.get(ENV, ""))


def wanted() -> str:
    """The mode this process's children use: the zygote's setting, else the environment's, else blocking."""
    if _configured is not None:
        return _configured
    value = os.environ.get(ENV, "").strip().lower()
    return value if value in MODES else "blocking"


def before_context() -> None:
    """In a CUDA child, before its context exists: make the device's primary context block while
    it waits, where the driver can switch it back for the timing stage. Never raises (any failure
    leaves the default)."""
    global _driver, _state
    _driver = None
    if wanted() != "blocking":
        _state = f"spin ({ENV}=spin)"
        return
    try:
        lib = ctypes.CDLL("libcuda.so.1")
        if not hasattr(lib, "cuCtxSetFlags"):
            _state = "spin (the driver has no cuCtxSetFlags)"
            return
        # _v2 sets the flags of an active primary context too (the name cuda.h maps to since CUDA 11)
        set_flags = getattr(lib, "cuDevicePrimaryCtxSetFlags_v2", None) or lib.cuDevicePrimaryCtxSetFlags
        device = ctypes.c_int(0)
        status = lib.cuInit(0) or lib.cuDeviceGet(ctypes.byref(device), 0)
        status = status or set_flags(device, CU_CTX_SCHED_BLOCKING_SYNC)
        if status != 0:
            _state = f"spin (CUDA driver error {status})"
            return
    except OSError as exc:
        _state = f"spin (no CUDA driver: {exc})"[:200]
        return
    _driver, _state = lib, "blocking"


def state() -> str:
    """What this process's context does while waiting: ``blocking``, or ``spin (why)``."""
    return _state


@contextlib.contextmanager
def spinning() -> Iterator[None]:
    """Spin while waiting inside the block (the timed rounds), block again after it; nothing where
    the context was left spinning. The context must be current in this thread."""
    lib = _driver
    if lib is None or lib.cuCtxSetFlags(CU_CTX_SCHED_SPIN) != 0:
        yield
        return
    try:
        yield
    finally:
        lib.cuCtxSetFlags(CU_CTX_SCHED_BLOCKING_SYNC)
