"""Several evaluations on one device: how many by default, back-pressure, and the neighbour-OOM retry.

Static checks, compilation and the correctness trials are mostly CPU work and idle device time;
only the timing stage needs the device to itself, and that stage takes a per-device exclusive
lease inside the workers (:mod:`.device_lease`). So a device serves several workers at once:

* :func:`default_workers_per_device` picks how many, from the host's cores and the device's
  memory (formula in its docstring and in docs/scaling.md);
* :class:`DeviceGate` holds new evaluations back while they would not fit next to those running
  on the device (by the needs :mod:`.memory_book` estimates) or its free memory is short (one
  alone always goes ahead), and lets an evaluation have the device to itself;
* :func:`neighbour_oom` says when an out-of-memory result may be the neighbours' doing: such a
  result is run again once, alone on the device, and marked with :func:`mark_retried`.

Imports neither torch nor triton; device memory is read through NVML (no device context).
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from ascend_kernel_gym.evaluation.errors import HARNESS_OUT_OF_MEMORY, REFERENCE_OUT_OF_MEMORY
from ascend_kernel_gym.evaluation.memory_book import CONTEXT_BYTES
from ascend_kernel_gym.evaluation.result import ErrorType, EvalResult

#: the most workers one device gets by default. cuda: on 80 GB H100s with 16 cores (2026-12-06,
#: sixth session) 8 ran the issue's burst at 2.47x and 2.52x of one worker (cold, warm) against
#: 2.33x and 2.18x for 4, and 12 and 16 were no faster than 8, the device's memory holding
#: evaluations back instead of failing them (earlier that day, before the timing arenas kept their
#: slack, 4 had beaten 8 on a cold burst); before spares, judges kept across jobs and that
#: back-pressure (2026-12-03), 4 had matched 8 on an H200. npu: not measured, so as before
MAX_WORKERS_PER_DEVICE = {"cuda": 8, "npu": 4}
#: host cores one worker is given by default (Triton compilation and the trials run on the CPU)
CORES_PER_WORKER = 2
#: device memory one worker is given by default (its child's context, inputs, outputs, a spare
#: child); an 80 GB H100 reads as 79 GiB
DEVICE_GIB_PER_WORKER = {"cuda": 9, "npu": 16}
#: device memory assumed where it cannot be read (an Ascend 910B has 64 GB of HBM)
ASSUMED_DEVICE_GIB = {"npu": 64, "cuda": 80}
#: a device is short of memory below this share of its total ...
LOW_MEMORY_FRACTION = 0.10
#: ... or below this many bytes, whichever is larger
LOW_MEMORY_BYTES = 4 << 30
#: how often a held-back evaluation reads the device's memory again
MEMORY_POLL_S = 0.25
#: how long an evaluation held back for memory may be overtaken by later ones that fit
MEMORY_PATIENCE_S = 10.0
#: an exclusive slot waits at most this long for the device's memory to be given back ...
SETTLE_MAX_S = 5.0
#: ... reading it this often, until it rose by less than this between two readings
SETTLE_POLL_S = 0.1
SETTLE_STEP_BYTES = 64 << 20
#: how a result's warning saying it was evaluated twice starts
RETRY_WARNING_PREFIX = "retried:"
#: how the evaluator's message for a child over its own host-memory cap starts (not a neighbour's doing)
OWN_MEMORY_CAP_MESSAGE = "the process used more than"
#: environment variable: how many host cores the evaluator may use (a Ray actor sets its share)
CPUS_ENV = "AKG_CPUS"
_VISIBLE_KEYS = {"cuda": "CUDA_VISIBLE_DEVICES", "npu": "ASCEND_RT_VISIBLE_DEVICES"}


def available_cores() -> int:
    """Host cores the evaluator may use: ``AKG_CPUS`` if set, else the process's CPU affinity."""
    configured = os.environ.get(CPUS_ENV, "").strip()
    if configured.isdigit() and int(configured) > 0:
        return int(configured)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1)


def default_workers_per_device(backend: str, cores: int, devices: int, device_bytes: int | None) -> int:
    """How many workers (zygotes) each device gets when not told.

    * interpreter: one per host core (the "device" is the CPU);
    * cuda / npu: ``min(MAX_WORKERS_PER_DEVICE, cores // (devices * CORES_PER_WORKER),
      device GiB // DEVICE_GIB_PER_WORKER)`` (the backend's), at least 1. Device memory that
      cannot be read counts as :data:`ASSUMED_DEVICE_GIB`.

    For example 8 on a one-H100 or one-H200 host with 16 cores, 4 on an 8 x Ascend 910B server
    (64 GB each).
    """
    if backend == "interpreter":
        return max(1, cores)
    gib = (device_bytes >> 30) if device_bytes else ASSUMED_DEVICE_GIB.get(backend, 16)
    by_cores = cores // (max(1, devices) * CORES_PER_WORKER)
    by_memory = gib // DEVICE_GIB_PER_WORKER.get(backend, 16)
    return max(1, min(MAX_WORKERS_PER_DEVICE.get(backend, 4), by_cores, by_memory))


def visible_devices(backend: str) -> list[str] | None:
    """The device ids the backend's ``*_VISIBLE_DEVICES`` variable names, or None when it is unset."""
    key = _VISIBLE_KEYS.get(backend)
    visible = os.environ.get(key) if key else None
    if not visible:
        return None
    return [v.strip() for v in visible.split(",") if v.strip()]


def device_id(backend: str, index: int) -> str:
    """The id (as the driver knows it) of the ``index``-th device this process may use."""
    ids = visible_devices(backend)
    return ids[index % len(ids)] if ids else str(index)


# --- device memory ------------------------------------------------------------------------------
class _NvmlMemory(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]


_NVML_LOCK = threading.Lock()
_NVML: list[ctypes.CDLL | None] = []


def _nvml() -> ctypes.CDLL | None:
    with _NVML_LOCK:
        if not _NVML:
            try:
                lib = ctypes.CDLL("libnvidia-ml.so.1")
                _NVML.append(lib if lib.nvmlInit_v2() == 0 else None)
            except (OSError, AttributeError):
                _NVML.append(None)
        return _NVML[0]


def device_memory(backend: str, device: str) -> tuple[int, int] | None:
    """``(free, total)`` bytes of device ``device`` (an id from :func:`device_id`), or None if unknown.

    CUDA through NVML (no CUDA context is made); the CPU and Ascend NPUs are not read (None).
    """
    if backend != "cuda":
        return None
    lib = _nvml()
    if lib is None:
        return None
    handle = ctypes.c_void_p()
    try:
        if device.isdigit():
            status = lib.nvmlDeviceGetHandleByIndex_v2(ctypes.c_uint(int(device)), ctypes.byref(handle))
        else:
            status = lib.nvmlDeviceGetHandleByUUID(device.encode(), ctypes.byref(handle))
        if status != 0:
            return None
        memory = _NvmlMemory()
        if lib.nvmlDeviceGetMemoryInfo(handle, ctypes.byref(memory)) != 0:
            return None
    except (AttributeError, OSError, ValueError):
        return None
    return int(memory.free), int(memory.total)


def memory_short(free: int, total: int) -> bool:
    """Whether a device with ``free`` of ``total`` bytes free is short of memory for one more evaluation."""
    return free < max(LOW_MEMORY_BYTES, int(LOW_MEMORY_FRACTION * total))


# --- the gate -----------------------------------------------------------------------------------
@dataclass
class Slot:
    """One evaluation's hold on a device.

    Attributes:
        exclusive: it has the device to itself.
        need: the device memory it is expected to take in bytes (None: unknown, counted as an
            equal share of the device).
        had_neighbour: another evaluation ran on the device at some time while this one held it.
        waited_s: how long it was held back (memory short, or someone had the device to itself).
        held_for_memory: it was held back at some time because it would not fit.
        asked_at: when it asked for the device (``time.monotonic()``).
    """

    exclusive: bool = False
    need: int | None = None
    had_neighbour: bool = False
    waited_s: float = 0.0
    held_for_memory: bool = False
    asked_at: float = 0.0


class DeviceGate:
    """Admission to one device: shared slots, exclusive slots, and back-pressure on memory.

    A shared slot waits while someone has (or waits for) the device to itself, or while it would
    not fit next to the evaluations running on the device: their needs and its own (from
    :class:`.memory_book.MemoryBook`; an unknown need counts as ``1 / workers`` of the room)
    together may not exceed the room, which is the device's memory less
    :data:`LOW_MEMORY_FRACTION` and one spare child's context per worker; nor may the device's free
    memory be short. An evaluation alone on the device always goes ahead. A slot held back longer
    than ``patience_s`` is not overtaken by later ones that would fit. An exclusive slot waits
    until no other slot is held, then until the device's free memory stops rising (the children
    of the evaluations before it exit after their results are in, see :meth:`_settle`).

    Args:
        memory: ``() -> (free, total)`` bytes of the device, or None where it cannot be read.
        total_bytes: the device's memory where ``memory`` cannot read it (an Ascend NPU's is
            assumed, :data:`ASSUMED_DEVICE_GIB`); None: no admission by bytes there.
        poll_s: how often a slot held back for memory reads it again.
        workers: workers sharing the device.
        patience_s: how long a slot held back for memory may be overtaken.
    """

    def __init__(
        self,
        memory: Callable[[], tuple[int, int] | None] | None = None,
        poll_s: float = MEMORY_POLL_S,
        workers: int = 1,
        patience_s: float = MEMORY_PATIENCE_S,
        total_bytes: int | None = None,
    ):
        self._memory = memory
        self._assumed_total = total_bytes
        self._poll_s = poll_s
        self._workers = max(1, workers)
        self._patience_s = patience_s
        self._cond = threading.Condition()
        self._holders: list[Slot] = []
        self._waiters: list[Slot] = []
        self._exclusive_waiting = 0
        self._total: int | None = None
        self.waiting = 0
        #: times a shared slot was held back because it would not fit (or the free memory was short)
        self.memory_waits = 0

    @property
    def workers(self) -> int:
        """Workers sharing this device."""
        return self._workers

    @property
    def load(self) -> int:
        """Evaluations holding or waiting for this device."""
        with self._cond:
            return len(self._holders) + self.waiting

    def room(self) -> int | None:
        """The bytes the evaluations on this device may need together (None: the memory is unread)."""
        if self._total is None:
            reading = self._memory() if self._memory is not None else None
            total = reading[1] if reading is not None else self._assumed_total
            if total is None:
                return None
            self._total = total
        spares = self._workers * CONTEXT_BYTES  # each worker's spare child
        return max(0, int(self._total * (1 - LOW_MEMORY_FRACTION)) - spares)

    def _counted(self, slot: Slot, room: int) -> int:
        return slot.need if slot.need is not None else room // self._workers

    def _short(self) -> bool:
        reading = self._memory() if self._memory is not None else None
        return reading is not None and memory_short(*reading)

    def _holdup(self, slot: Slot) -> str:
        """Why ``slot`` must wait now: ``""`` (it need not), ``"exclusive"`` or ``"memory"``."""
        if slot.exclusive:
            return "exclusive" if self._holders else ""
        if self._exclusive_waiting or any(s.exclusive for s in self._holders):
            return "exclusive"
        if not self._holders:
            return ""
        now = time.monotonic()
        if any(w.asked_at < slot.asked_at and now - w.asked_at > self._patience_s for w in self._waiters):
            return "memory"  # behind one that has waited long enough
        room = self.room()
        if room is not None and sum(self._counted(h, room) for h in self._holders) + self._counted(slot, room) > room:
            return "memory"
        return "memory" if self._short() else ""

    def fits(self, need: int | None) -> bool:
        """Whether a shared slot expected to take ``need`` bytes would be admitted now (it takes none)."""
        with self._cond:
            return not self._holdup(Slot(need=need, asked_at=time.monotonic()))

    @contextmanager
    def slot(self, exclusive: bool = False, need: int | None = None) -> Iterator[Slot]:
        """Hold the device (shared, or to itself) for the ``with`` block; ``need``: the bytes the
        evaluation is expected to take (None: unknown)."""
        slot = Slot(exclusive=exclusive, need=need, asked_at=time.monotonic())
        with self._cond:
            self.waiting += 1
            self._exclusive_waiting += exclusive
            self._waiters.append(slot)
            counted = False
            try:
                while reason := self._holdup(slot):
                    if reason == "memory" and not counted:
                        counted = slot.held_for_memory = True
                        self.memory_waits += 1
                    self._cond.wait(self._poll_s)
            finally:
                self.waiting -= 1
                self._exclusive_waiting -= exclusive
                self._waiters.remove(slot)
            if self._holders:
                slot.had_neighbour = True
                for other in self._holders:
                    other.had_neighbour = True
            self._holders.append(slot)
        try:
            if exclusive:
                self._settle()
            slot.waited_s = round(time.monotonic() - slot.asked_at, 4)
            yield slot
        finally:
            with self._cond:
                self._holders.remove(slot)
                self._cond.notify_all()

    def _settle(self) -> None:
        """Wait (at most :data:`SETTLE_MAX_S`) until the device's free memory stops rising.

        An evaluation's reply comes before its children have exited and its judge has let go of
        its tensors; an evaluation run alone after an out-of-memory must not find them still there
        (two of eleven such retries did, eight workers on an H100, 2026-12-05).
        """
        if self._memory is None:
            return
        until = time.monotonic() + SETTLE_MAX_S
        last = self._memory()
        while last is not None and time.monotonic() < until:
            time.sleep(SETTLE_POLL_S)
            now = self._memory()
            if now is None or now[0] - last[0] < SETTLE_STEP_BYTES:
                return
            last = now


def device_share(backend: str, workers_per_device: int) -> float:
    """The share of a device's free memory one evaluation plans its timing buffers with: each of
    the workers sharing a device gets an equal part (the interpreter's "device" is the host)."""
    return 1.0 if backend == "interpreter" else 1.0 / max(1, workers_per_device)


# --- retries ------------------------------------------------------------------------------------
def neighbour_oom(result: EvalResult, had_neighbour: bool) -> bool:
    """Whether ``result`` ran out of memory while it shared the device (so it gets one more run, alone).

    A child stopped at its own host-memory cap (``memory_mb``) is its own doing and is not retried.
    The task's reference running out of device memory (a ``harness_error``, in its reference child)
    is retried the same way: eight workers on an 80 GB H100 left the references of five of 50
    evaluations without memory (2026-12-05); so is the harness's own work in the candidate's child
    (``CUDA error: out of memory`` from its buffers, the same day).
    """
    if not had_neighbour:
        return False
    if result.error_type == ErrorType.HARNESS_ERROR:
        return any(marker in result.error_message for marker in (REFERENCE_OUT_OF_MEMORY, HARNESS_OUT_OF_MEMORY))
    return result.error_type == ErrorType.OOM and not result.error_message.startswith(OWN_MEMORY_CAP_MESSAGE)


def failure_summary(result: EvalResult, limit: int = 160) -> str:
    """``result``'s error type and the first line of its message, for a retry's warning."""
    lines = (result.error_message or "").strip().splitlines()
    first = lines[0] if lines else ""
    if len(first) > limit:
        first = first[: limit - 3] + "..."
    return f"{result.error_type.value}: {first}" if first else result.error_type.value


def mark_retried(result: EvalResult, why: str) -> EvalResult:
    """Add the ``retried: ...`` warning to ``result`` (in place) and return it."""
    result.warnings.append(f"{RETRY_WARNING_PREFIX} {why}")
    return result


def was_retried(result: EvalResult) -> bool:
    """Whether ``result`` comes from a second run of its request (see :func:`mark_retried`)."""
    return any(w.startswith(RETRY_WARNING_PREFIX) for w in result.warnings)
