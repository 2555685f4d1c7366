"""A per-device lease: many evaluations share a device, one at a time times on it.

Several zygotes (of one evaluator, of several evaluators, of several processes on one host) may
serve the same device. Their static, compile and correctness stages may overlap; a timing stage
must see a quiet device. Two lock files per device, held by the zygotes (the trusted side; a
candidate's child never touches them) with :func:`fcntl.flock`:

* ``<key>.lock``: a zygote with a child doing device work holds it *shared*; the zygote whose child
  times holds it *exclusive*.
* ``<key>.turn``: the turnstile. A zygote that wants to time takes it exclusive first, so no new
  shared holder gets in while it waits (no starvation by a stream of newcomers); shared holders
  pass through it on the way in.

A zygote that sees the turnstile taken (someone wants to time) stops its own children
(``SIGSTOP``: a stopped process submits no device work and creates no context), lets go of its
shared hold, and resumes them (``SIGCONT``) once the timing is over; the stopped time is not
counted against their time limits. A stopped process still tears down a device context it is
leaving, and freeing device memory or starting or ending a context next to a timing moves its
PyTorch calls (``bench/gpu_quiet_probe.py``), so a zygote holds the device shared until its
exiting children are reaped and its judging child has given its memory back, and stops spares
that are still starting their contexts. :mod:`fcntl` locks die with their process: a zygote that
is killed frees its leases.

Every call here is non-blocking; the zygote's supervision loop drives the state machine.
"""

from __future__ import annotations

import fcntl
import os
import re
import signal
import tempfile
import time
from collections.abc import Callable

#: the longest a job's children stay stopped, in all, for other zygotes' timings; past it they run on
PAUSE_MAX_S = 90.0
_VISIBLE = {"cuda": "CUDA_VISIBLE_DEVICES", "npu": "ASCEND_RT_VISIBLE_DEVICES"}


def switch(configured: str | None, default: bool) -> bool:
    """An on/off setting (``1``/``0``, ``true``/``false``, ``on``/``off``, ``yes``/``no``, any
    case), or ``default`` when it is unset or anything else."""
    raw = (configured or "").strip().lower()
    if raw in ("0", "false", "off", "no"):
        return False
    if raw in ("1", "true", "on", "yes"):
        return True
    return default


def lease_enabled(backend: str, configured: str = "") -> bool:
    """Whether zygotes of ``backend`` take device leases: ``configured`` (the pool passes
    ``AKG_DEVICE_LEASE``: ``1``/``0``) or the backend's default (devices yes; the interpreter's
    "device" is the host's CPUs, which every process shares anyway)."""
    return switch(configured, backend in _VISIBLE)


def device_key(backend: str) -> str:
    """A file-name-safe id of the device this process sees (its first visible device)."""
    visible = os.environ.get(_VISIBLE.get(backend, ""), "") if backend in _VISIBLE else "cpu"
    first = (visible.split(",")[0].strip() or "0") if visible is not None else "0"
    return re.sub(r"[^A-Za-z0-9_.-]", "_", f"{backend}-{first}")


def default_lease_dir() -> str:
    return os.path.join(tempfile.gettempdir(), f"akg-device-lease-{os.getuid()}")


class DeviceLease:
    """One zygote's hold on one device's lease (see the module docstring).

    States: ``free`` (holds nothing), ``shared`` (its child works on the device), ``exclusive``
    (its child times). :meth:`want_exclusive` moves towards ``exclusive`` one non-blocking step
    per call.
    """

    def __init__(self, key: str, directory: str | None = None) -> None:
        directory = directory or default_lease_dir()
        os.makedirs(directory, mode=0o700, exist_ok=True)
        self.key = key
        self._lock = os.open(os.path.join(directory, f"{key}.lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        self._turn = os.open(os.path.join(directory, f"{key}.turn"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        self.state = "free"
        self._turn_held = False

    @staticmethod
    def _try(fd: int, mode: int) -> bool:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def timing_elsewhere(self) -> bool:
        """Another zygote wants to time or is timing on this device (it holds the turnstile)."""
        if self._turn_held:
            return False
        if self._try(self._turn, fcntl.LOCK_SH):
            fcntl.flock(self._turn, fcntl.LOCK_UN)
            return False
        return True

    def try_shared(self) -> bool:
        """Hold the device shared (no timing running or waiting elsewhere); True once held."""
        if self.state in ("shared", "exclusive"):
            return True
        if not self._try(self._turn, fcntl.LOCK_SH):
            return False
        try:
            if not self._try(self._lock, fcntl.LOCK_SH):
                return False
        finally:
            fcntl.flock(self._turn, fcntl.LOCK_UN)
        self.state = "shared"
        return True

    def want_exclusive(self) -> bool:
        """One step towards holding the device alone; True once held.

        Drops this zygote's own shared hold, takes the turnstile (newcomers then wait), then waits
        for the other holders to drop theirs.
        """
        if self.state == "exclusive":
            return True
        if self.state == "shared":
            # Never wait for the turnstile while holding the device: two zygotes that both want to
            # time would each wait for the other.
            fcntl.flock(self._lock, fcntl.LOCK_UN)
            self.state = "free"
        if not self._turn_held:
            if not self._try(self._turn, fcntl.LOCK_EX):
                return False
            self._turn_held = True
        if not self._try(self._lock, fcntl.LOCK_EX):
            return False
        self.state = "exclusive"
        return True

    def release(self) -> None:
        """Let go of everything this zygote holds."""
        fcntl.flock(self._lock, fcntl.LOCK_UN)
        if self._turn_held:
            fcntl.flock(self._turn, fcntl.LOCK_UN)
            self._turn_held = False
        self.state = "free"

    def close(self) -> None:
        self.release()
        for fd in (self._lock, self._turn):
            try:
                os.close(fd)
            except OSError:
                pass


def signal_group(pid: int, sig: int) -> None:
    """Send ``sig`` to ``pid``'s process group, or to ``pid`` alone where it leads none."""
    for send in (os.killpg, os.kill):
        try:
            send(pid, sig)
            return
        except OSError:
            continue


class LeaseKeeper:
    """The zygote's side of the lease during one job: shared while its children work, paused
    (children stopped) while another zygote times, exclusive while its own child times (from the
    go-ahead until the child says its timed calls are over, :meth:`end_timing`).

    Args:
        lease: this device's lease.
        clock: the zygote's clock (``time.perf_counter``), so paused time adds to its deadlines.
    """

    def __init__(self, lease: DeviceLease, clock: Callable[[], float]) -> None:
        self.lease = lease
        self.clock = clock
        #: seconds this job's children spent stopped for another zygote's timing
        self.paused_s = 0.0
        #: seconds this job waited for the lease before it started and before its timing
        self.waited_s = 0.0
        self._paused: list[int] = []
        self._paused_at: float | None = None
        self._want_since: float | None = None
        #: stopped while this job waits for the device alone (:meth:`want_exclusive`)
        self._held: list[int] | None = None

    def enter(self, until: float, stopped: list[int]) -> bool:
        """Hold the device shared before the job starts (waiting up to ``until`` for another
        zygote's timing to end), then resume ``stopped`` (spares stopped when the last job ended)."""
        started = self.clock()
        held = self.lease.try_shared()
        while not held and self.clock() < until:
            time.sleep(0.005)
            held = self.lease.try_shared()
        self.waited_s += self.clock() - started
        for pid in stopped:
            signal_group(pid, signal.SIGCONT)
        return held

    @property
    def paused(self) -> bool:
        return self._paused_at is not None

    def turn(self, pids: Callable[[], list[int]], settled: Callable[[], bool] = lambda: True) -> None:
        """One supervision turn of a job whose child is not timing: pause for another zygote's
        timing, or resume after it. ``settled()``: none of the job's processes is still exiting;
        until then the device stays held, since a device context torn down next to a timing
        slows its PyTorch calls (by 3-4 %, ``bench/gpu_quiet_probe.py``) and a stopped process
        cannot stop its own teardown."""
        if self._paused_at is None:
            if self.lease.state == "shared" and self.lease.timing_elsewhere() and settled():
                self._pause(pids)
        elif self.lease.try_shared():
            self.resume()

    def end_timing(self, pids: Callable[[], list[int]]) -> None:
        """The job's timed calls are over: give up holding the device alone and hold it shared
        again, as before the timing (pausing the job's children if another zygote got in first)."""
        self.lease.release()
        if not self.lease.try_shared():
            self._pause(pids)

    def _pause(self, pids: Callable[[], list[int]]) -> None:
        if self.paused_s > PAUSE_MAX_S:
            return  # starved for too long: its own limit must hold (the pool waits so long only)
        self._paused = pids()
        for pid in self._paused:
            signal_group(pid, signal.SIGSTOP)
        self.lease.release()
        self._paused_at = self.clock()

    def resume(self, keep: list[int] | None = None) -> None:
        """Resume the children stopped for another zygote's timing, but for ``keep``."""
        if self._paused_at is None:
            return
        for pid in self._paused:
            if pid not in (keep or ()):
                signal_group(pid, signal.SIGCONT)
        self.paused_s += self.clock() - self._paused_at
        self._paused, self._paused_at = [], None

    def want_exclusive(self, hold: Callable[[], list[int]] = list) -> bool:
        """One step towards timing alone. Paused children are resumed (the one that asked must
        run) but for ``hold()`` (asked once: spares still starting their contexts), which stay
        stopped until the device is held alone: the job holds nothing while it waits, so nothing
        of it may start a context next to the timing it waits for."""
        if self._held is None:
            self._held = hold()
            for pid in self._held:
                signal_group(pid, signal.SIGSTOP)
        self.resume(keep=self._held)
        now = self.clock()
        if self._want_since is None:
            self._want_since = now
        held = self.lease.want_exclusive()
        if held:
            self._release_held()
            if self._want_since is not None:
                self.waited_s += now - self._want_since
                self._want_since = None
        return held

    def _release_held(self) -> None:
        for pid in self._held or ():
            signal_group(pid, signal.SIGCONT)
        self._held = None

    def wanted_for(self) -> float:
        """Seconds since this job's timing first asked for the lease (0 when it is not asking)."""
        return 0.0 if self._want_since is None else self.clock() - self._want_since

    def leave(self, stop: list[int]) -> None:
        """The job is over: stop ``stop`` (spares still starting their device) and let go."""
        self.resume()
        self._release_held()
        for pid in stop:
            signal_group(pid, signal.SIGSTOP)
        self.lease.release()
        self._want_since = None
