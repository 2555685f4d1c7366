"""A gate on the device for the timing stage (CUDA): the timed call starts once the host is done.

In stream mode each timed call is queued behind work that keeps the device busy while the host
launches it, so the window measures device time. A fixed cushion of flush writes must outlast
the host's launch time, and is sized generously (``timing.HOST_FACTOR`` times the warm-up's
90th percentile): the device writes flushes for all of it, however soon the host was done, and
that is time the device is held alone for the timing. The gate instead holds the stream
with one program that polls a flag in pinned host memory: the host sets the flag once the call
has returned, and the call's work starts right then, or when the gate's limit (the cushion's
length) has passed, whichever comes first. The window is the same as with a long enough
cushion; the device waits only as long as the host needs. The gate writes whether it opened by
its limit (the host's part outran it), so an exposed call is known exactly instead of guessed
from host clocks.

Only the harness uses it: it is made in the child before the job (:func:`prepare`, from the
child's warm-up, before the recorder wraps Triton's launch path) and launched through the
launch function as it was then. Elsewhere (npu, the interpreter, no pinned memory, a Triton
without the inline assembly it needs) :func:`prepare` leaves none and the cushion is used.
It is on by default (:data:`DEFAULT_ON`; ``AKG_TIMING_GATE=0`` turns it off); docs/scaling.md has
what was measured.
"""

from __future__ import annotations

import ctypes
import os
from typing import Any

import torch

from ascend_kernel_gym.evaluation.device_lease import switch

#: ``AKG_TIMING_GATE=1`` turns the gate on, ``0`` off; unset: :data:`DEFAULT_ON`
ENV = "AKG_TIMING_GATE"
#: on: on H100s (2026-12-05) one worker's level-1 speedups stayed within 2.7-3.8 % of the
#: cushion's with the device held 18-25 % less; every GPU run since (2026-12-05 to 12-06, all
#: 45 tasks of levels 1-3, one to sixteen workers) had it on, and its self-check (:meth:`DeviceGate.check`)
#: falls back to the cushion where it does not hold the stream (docs/scaling.md)
DEFAULT_ON = True

_kernel: Any = None
try:  # a Triton build without the NVIDIA backend has no globaltimer register: no gate there
    import triton
    import triton.language as tl

    @triton.jit
    def _now():
        return tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1)

    @triton.jit(do_not_specialize=["want", "limit_ns"])
    def _gate_kernel(flag_ptr, want, limit_ns):
        start = _now()
        opened = (tl.load(flag_ptr, volatile=True) >= want).to(tl.int32)
        elapsed = start - start
        while (opened == 0) & (elapsed < limit_ns):
            opened = (tl.load(flag_ptr, volatile=True) >= want).to(tl.int32)
            elapsed = _now() - start
        if opened == 0:
            tl.store(flag_ptr + 1, want)

    _kernel = _gate_kernel
except Exception:  # noqa: BLE001  (no usable Triton: the cushion is used)
    _kernel = None

#: the zygote's setting (:func:`configure`); its children, forked from it, inherit it
_configured: bool | None = None
_ready: DeviceGate | None = None
#: why there is no gate in this process (shown in the timing details), or "" when there is one
_why = "not prepared"


class DeviceGate:
    """One pinned flag pair and the gate kernel, on one CUDA device.

    ``flags[0]``: the host's release counter; ``flags[1]``: the last gate that opened by its limit.
    Each :meth:`arm` queues a gate waiting for the next count; :meth:`release` sets it.
    """

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.flags = torch.zeros(2, dtype=torch.int32, pin_memory=True)
        base = self.flags.data_ptr()
        self._release = ctypes.c_int32.from_address(base)
        self._opened_by_limit = ctypes.c_int32.from_address(base + 4)
        self.seq = 0
        from triton.runtime.jit import JITFunction

        # Triton's launch as it is now, before the recorder wraps it (the gate is the harness's launch)
        self._launch = JITFunction.run

    def arm(self, limit_ms: float) -> None:
        """Queue a gate on the current stream: the work queued after it waits for :meth:`release`
        or ``limit_ms``, whichever comes first."""
        self.seq += 1
        self._launch(_kernel, self.flags, self.seq, max(1, int(limit_ms * 1e6)), grid=(1,), warmup=False)

    def release(self) -> None:
        self._release.value = self.seq

    def opened_by_limit(self) -> bool:
        """Whether the last gate opened by its limit (read after the device finished it)."""
        return self._opened_by_limit.value == self.seq

    def check(self) -> None:
        """Raise unless the gate holds the stream until released and opens by its limit.

        The marker is allocated, and its fill kernel loaded, before the gate is armed: with CUDA's
        lazy module loading the first launch of a kernel (and a fresh device allocation) can wait
        for the device to go idle, which a held gate only does at its limit. The timed calls are
        the same: the warm-up has loaded their kernels and cached their memory.
        """
        sync = torch.cuda.synchronize
        marker = torch.zeros(1, device=self.device)
        sync()
        self.arm(5000.0)
        marker.fill_(1.0)  # queued behind the gate
        held = not torch.cuda.current_stream().query()
        self.release()
        sync()
        if not held or self.opened_by_limit() or float(marker.item()) != 1.0:
            raise RuntimeError("the gate did not hold the stream until released")
        self.arm(0.05)
        sync()
        if not self.opened_by_limit():
            raise RuntimeError("the gate did not open by its limit")


def configure(setting: str) -> None:
    """Set whether this process and the children it forks want the gate (``"1"``, ``"0"`` or
    ``""`` for the default). The worker's zygote calls it with the caller's ``AKG_TIMING_GATE``:
    the zygote and its children run with a cleaned environment that does not carry it."""
    global _configured
    _configured = switch(setting, DEFAULT_ON)


def wanted() -> bool:
    """Whether the gate is on here: the zygote's setting, else ``AKG_TIMING_GATE``."""
    return _configured if _configured is not None else switch(os.environ.get(ENV), DEFAULT_ON)


def prepare(device: torch.device) -> None:
    """Make this process's gate (the child's warm-up, before its job); see the module docstring."""
    global _ready, _why
    _ready, _why = None, ""
    if not wanted():
        _why = f"off ({ENV}=0)"
    elif device.type != "cuda":
        _why = f"not on {device.type}"
    elif _kernel is None:
        _why = "no Triton with the NVIDIA backend"
    else:
        try:
            gate = DeviceGate(device)
            gate.check()
        except Exception as exc:  # noqa: BLE001  (any failure: the cushion is used)
            _why = f"unavailable: {type(exc).__name__}: {exc}"[:200]
        else:
            _ready = gate


def ready() -> tuple[DeviceGate | None, str]:
    """This process's gate and, when there is none, why."""
    return _ready, _why
