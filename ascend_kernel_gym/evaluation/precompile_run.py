"""The zygote's side of a precompile child (:mod:`.precompile`): its deadline, its cache, the marks.

:class:`PrecompileRun` follows one child from the zygote's supervision loop (:meth:`poll`, no
blocking call): every entry the child finished in its Triton cache is copied into the candidate
child's cache, and two marks in the candidate's sandbox tell that child how far it is:

* :data:`READY`: the candidate's child may import the candidate now. Written once the main case's
  kernels are compiled and copied, once the precompile child is gone, or once it has finished no
  new kernel for :data:`STALL_S` (it is busy with something else: the candidate's child is better
  off compiling itself than waiting).
* :data:`ENDED`: the precompile child is gone and everything it finished is copied (the shape
  cases' kernels too). The candidate's child waits for it, briefly, before its first shape case.

What the child wrote is copied only if it looks like Triton's cache: one directory level of hashed
names (the first :data:`MAX_ENTRIES`), regular files with plain names, at most
:data:`MAX_ENTRY_FILES` per entry, :data:`MAX_COPY_BYTES` per job and :data:`POLL_COPY_BYTES` per
look, never over an entry that is already there (the warm cache's), and each group index
rewritten to the new place. An entry is what the candidate's own child could
write into its own cache anyway (its sandbox guard lets it write there), so a forged one gains
a candidate nothing it could not have had; the harness's own kernels are loaded before any
candidate code runs.

Imports neither torch nor triton: the candidate's child imports :func:`wait_for_mark` from here too.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ascend_kernel_gym.evaluation.device_lease import signal_group

#: in the candidate's sandbox: import the candidate now (see the module docstring)
READY = "precompile.ready"
#: in the candidate's sandbox: the precompile child is gone, all it compiled is copied
ENDED = "precompile.end"
#: in the precompile child's sandbox: the main case's kernels are compiled
MAIN_DONE = "precompile.main"
#: the longest a precompile child runs (a job's own deadline may end it sooner)
PRECOMPILE_MAX_S = 60.0
#: seconds without a newly finished kernel after which the candidate's child stops waiting
STALL_S = 10.0
#: how often the zygote looks into the precompile child's cache
POLL_S = 0.1
#: the most a job's precompile child may hand over, and the most one look copies: the look runs
#: in the zygote's supervision loop, which must go on pausing its children for neighbours' timings
MAX_COPY_BYTES = 128 * 1024 * 1024
POLL_COPY_BYTES = 8 * 1024 * 1024
MAX_ENTRY_FILES = 32
#: cache entries looked at per job (a kernel per case and configuration; the rest is not copied)
MAX_ENTRIES = 256
#: the longest the candidate's child waits for :data:`ENDED` before building a shape case
CASE_WAIT_S = 5.0
CACHE_DIRNAME = "triton_cache"

_ENTRY = re.compile(r"^[A-Za-z0-9_-]{8,128}$")
_FILE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,200}$")


def wait_for_mark(sandbox: str, name: str, limit_s: float) -> float:
    """Wait until the mark ``name`` exists in ``sandbox`` or ``limit_s`` passed; the seconds waited."""
    path = os.path.join(sandbox, name)
    started = time.perf_counter()
    while not os.path.exists(path) and time.perf_counter() - started < limit_s:
        time.sleep(0.005)
    return time.perf_counter() - started


@dataclass
class PrecompileRun:
    """One job's precompile child, seen from the zygote.

    Args:
        pid: the child (its own process group).
        sandbox: its scratch directory (holds its Triton cache).
        target: the candidate child's scratch directory.
        deadline: when it is killed (the zygote's ``time.perf_counter`` clock).
    """

    pid: int
    sandbox: str
    target: str
    deadline: float
    clock: Callable[[], float] = time.perf_counter
    copied: set[str] = field(default_factory=set)
    copied_bytes: int = 0
    status: int | None = None
    ready_at: float | None = None
    started_at: float = 0.0
    last_new_at: float = 0.0
    _polled_at: float = -1.0

    def __post_init__(self) -> None:
        self.started_at = self.last_new_at = self.clock()

    @property
    def over(self) -> bool:
        return self.status is not None

    def poll(self) -> None:
        """One look (at most every :data:`POLL_S`): copy what is new, write the marks that are due."""
        now = self.clock()
        if self.over or now - self._polled_at < POLL_S:
            return
        self._polled_at = now
        try:
            done, status = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:
            done, status = self.pid, -1
        if not done and now > self.deadline:
            signal_group(self.pid, signal.SIGKILL)
            done, status = os.waitpid(self.pid, 0)[0], -signal.SIGKILL
        if self.copy_new():
            self.last_new_at = now
        if done:
            self.status = status
            self.copy_new()
            self._mark(READY)
            self._mark(ENDED)
            shutil.rmtree(self.sandbox, ignore_errors=True)
            return
        main_done = os.path.exists(os.path.join(self.sandbox, MAIN_DONE))
        if self.ready_at is None and (main_done or now - self.last_new_at > STALL_S):
            self._mark(READY)

    def retarget(self, candidate_sandbox: str) -> None:
        """The job went to another candidate child (its first died before taking it): copy there."""
        self.target = candidate_sandbox
        self.copied.clear()
        self.copied_bytes = 0
        self.ready_at = None
        if self.over:
            self.copy_new()
            self._mark(READY)
            self._mark(ENDED)

    def finish(self) -> None:
        """The job is over: kill the child if it still runs, reap it, remove its sandbox."""
        if self.status is None:
            signal_group(self.pid, signal.SIGKILL)
            try:
                self.status = os.waitpid(self.pid, 0)[1]
            except ChildProcessError:
                self.status = -1
        shutil.rmtree(self.sandbox, ignore_errors=True)

    def summary(self) -> dict[str, float]:
        """For the result's stage durations: seconds until the candidate's child could go on
        (``precompile.ready``), cache entries copied (``precompile.entries``)."""
        summary = {"precompile.entries": float(len(self.copied))}
        if self.ready_at is not None:
            summary["precompile.ready"] = round(self.ready_at - self.started_at, 4)
        return summary

    def _mark(self, name: str) -> None:
        if name == READY:
            if self.ready_at is not None:
                return
            self.ready_at = self.clock()
        write_mark(self.target, name)

    def copy_new(self) -> int:
        """Copy the entries finished since the last look; how many were copied."""
        source = os.path.join(self.sandbox, CACHE_DIRNAME)
        destination = os.path.join(self.target, CACHE_DIRNAME)
        try:
            names = sorted(os.listdir(source))
        except OSError:
            return 0
        count = copied_now = 0
        for name in names[:MAX_ENTRIES]:
            if name in self.copied or not _ENTRY.match(name):
                continue
            if copied_now >= POLL_COPY_BYTES:
                break  # the rest at the next look
            size = copy_entry(os.path.join(source, name), destination, name, MAX_COPY_BYTES - self.copied_bytes)
            if size is None:
                continue  # not finished yet (no group index), or refused: looked at again next time
            self.copied.add(name)
            self.copied_bytes += size
            copied_now += size
            count += size > 0
        return count


def write_mark(sandbox: str, name: str) -> None:
    """Leave the mark ``name`` in ``sandbox`` (nothing if that sandbox is gone)."""
    try:
        with open(os.path.join(sandbox, name), "w", encoding="utf-8") as handle:
            handle.write("1\n")
    except OSError:
        pass


def copy_entry(source: str, destination: str, name: str, budget: int) -> int | None:
    """Copy one finished cache entry into ``destination/name``; its bytes (0: already there), or
    None when it is not finished, not a plain cache entry, or over ``budget``."""
    try:
        if not stat.S_ISDIR(os.lstat(source).st_mode):
            return None
        files = sorted(os.listdir(source))
    except OSError:
        return None
    if not any(f.startswith("__grp__") and f.endswith(".json") for f in files):
        return None
    plain = []
    total = 0
    for file_name in files:
        if file_name.startswith("tmp."):
            continue  # Triton's write in progress (another file of the entry)
        try:
            info = os.lstat(os.path.join(source, file_name))
        except OSError:
            return None
        if not _FILE.match(file_name) or not stat.S_ISREG(info.st_mode):
            return None
        plain.append(file_name)
        total += info.st_size
    if len(plain) > MAX_ENTRY_FILES or total > budget:
        return None
    final = os.path.join(destination, name)
    if os.path.lexists(final):
        return 0
    staging = os.path.join(destination, f".akg-{name}-{os.getpid()}")
    try:
        os.makedirs(staging)
        for file_name in plain:
            data = _read_plain(os.path.join(source, file_name))
            if file_name.startswith("__grp__"):
                data = _regroup(data, final, set(plain))
            with open(os.path.join(staging, file_name), "wb") as handle:
                handle.write(data)
            os.chmod(os.path.join(staging, file_name), 0o600)
        os.chmod(staging, 0o700)
        os.rename(staging, final)
    except (OSError, ValueError):
        shutil.rmtree(staging, ignore_errors=True)
        return 0 if os.path.lexists(final) else None
    return total


def _read_plain(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


def _regroup(data: bytes, final: str, files: set[str]) -> bytes:
    """A group index pointing at the entry's files in their new place (ValueError if malformed)."""
    group = json.loads(data.decode("utf-8"))
    paths = group.get("child_paths") if isinstance(group, dict) else None
    if not isinstance(paths, dict):
        raise ValueError("a cache group index without child_paths")
    moved = {}
    for key, path in paths.items():
        base = os.path.basename(str(path))
        if not isinstance(key, str) or base not in files:
            raise ValueError("a cache group index naming a file outside its entry")
        moved[key] = os.path.join(final, base)
    return json.dumps({"child_paths": moved}).encode("utf-8")
