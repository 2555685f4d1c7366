"""The operating system's sandbox around one evaluator child (issue 21, point 2).

:func:`enter_os_sandbox` is called once, in a freshly forked and still single-threaded child,
before any device is initialised and before the candidate's code is imported. It applies, each
where the machine allows it, and reports which layers are on (a missing facility turns its
layer off and is reported; nothing raises for it):

- ``user_ns``: a new user namespace; the current uid/gid map to root inside, which owns the
  namespaces below, and every capability is dropped once they are set up (``capabilities``);
- ``mount_ns``: a new mount namespace whose root is a fresh tmpfs holding read-only bind mounts
  of exactly the allowed paths, the scratch directory (the only writable place), a private
  ``/dev/shm``, the allowed device nodes and ``/proc``; every other path is invisible;
- ``net_ns`` (no interface up: even ``127.0.0.1`` is unreachable), ``ipc_ns``, ``uts_ns``;
- ``pid_ns``: the child forks once more; the new process is PID 1 of a new PID namespace with
  its own ``/proc``, it sees no other process of the machine and can signal none. The first
  process stays outside, relays the job pipe, waits, and exits with the same status, so the
  caller (the zygote) keeps one pid to watch and kill; the inner process dies with it. Off by
  default on device backends: CUDA does not initialise in a PID namespace owned by a user
  namespace (error 304 on an H200), whatever ``/proc`` is mounted;
- ``no_new_privs``, ``not_dumpable`` (``prctl``);
- ``landlock``: reads only beneath the allowed paths, writes only in the scratch directory (and
  the process's own ``/proc/self``, which the CUDA driver writes), execution only of the
  backend's toolchain; TCP bind/connect and signals or abstract sockets out of the sandbox
  refused where the kernel's Landlock ABI has them (4, 6);
- ``seccomp`` (the PyPI ``pyseccomp`` package over ``libseccomp``): allow by default, ``EPERM``
  for ptrace, process_vm_*, every mount call, namespace changes, keyrings, BPF, modules, kexec,
  reboot, swap, perf events, userfaultfd, io_uring, and ``execve`` when the policy allows no
  executable.

:func:`probe_os_sandbox` tries the whole sequence once in a throwaway child (for ``akg doctor``).
Imports neither torch nor triton.
"""

from __future__ import annotations

import dataclasses
import errno
import functools
import json
import os
import select
import shutil
import signal
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ascend_kernel_gym.evaluation import os_sandbox_calls as calls
from ascend_kernel_gym.evaluation.os_sandbox_paths import BACKENDS, BASE_DEVICES, default_paths
from ascend_kernel_gym.evaluation.os_sandbox_root import RootBuilder

LAYERS = (
    "user_ns",
    "mount_ns",
    "net_ns",
    "ipc_ns",
    "uts_ns",
    "pid_ns",
    "capabilities",
    "no_new_privs",
    "not_dumpable",
    "landlock",
    "seccomp",
)
ACTIVE = "active"
#: the state of a layer the policy leaves off on purpose
LAYER_DISABLED = "off: disabled by the policy"

_NAMESPACE_FLAGS = {
    "mount_ns": calls.CLONE_NEWNS,
    "net_ns": calls.CLONE_NEWNET,
    "ipc_ns": calls.CLONE_NEWIPC,
    "uts_ns": calls.CLONE_NEWUTS,
    "pid_ns": calls.CLONE_NEWPID,
}
_ENTERED = False


class SandboxError(RuntimeError):
    """The sandbox was misused (bad policy, a multi-threaded caller, a second call)."""


@dataclass(frozen=True)
class SandboxPolicy:
    """What one sandboxed child may touch.

    Args:
        scratch: absolute path of an existing directory: the only writable place (and the cwd).
        read_paths: files or directories readable (with everything beneath); missing ones are skipped.
        exec_paths: files or directories whose files may be executed (Triton's toolchain on devices);
            empty: no ``execve`` at all.
        device_paths: device nodes (globs allowed) opened read/write with ioctls (``/dev/nvidia*``).
        hidden_paths: directories beneath a readable path masked by an empty one (solutions).
        pid_namespace: whether to fork into a new PID namespace (see the module docstring).
        layers: the layers to try (see :data:`LAYERS`); the others are reported as disabled.
        keep_fds: when given, every other descriptor above 2 is closed first (the child's pipes stay).
        relay_fds: with a PID namespace, descriptors the outer process reads and passes on to the
            inner one through a pipe of its own (the job pipe): what arrives after the outer process
            died reaches nobody, so a half-dead child can never take a job.
        shm_mb: size of the private ``/dev/shm``.
    """

    scratch: str
    read_paths: tuple[str, ...] = ()
    exec_paths: tuple[str, ...] = ()
    device_paths: tuple[str, ...] = BASE_DEVICES
    hidden_paths: tuple[str, ...] = ()
    pid_namespace: bool = True
    layers: frozenset[str] = frozenset(LAYERS)
    keep_fds: tuple[int, ...] | None = None
    relay_fds: tuple[int, ...] = ()
    shm_mb: int = 64

    @property
    def allow_exec(self) -> bool:
        return bool(self.exec_paths)

    def replace(self, **changes: Any) -> SandboxPolicy:
        return dataclasses.replace(self, **changes)


@dataclass
class SandboxReport:
    """Which layers are on: ``layers[name]`` is ``"active"`` (maybe with details) or ``"off: why"``.

    ``host_pid``: with a PID namespace, the pid of the sandboxed process as the host sees it.
    """

    layers: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    host_pid: int | None = None
    seconds: float = 0.0

    def active(self, name: str) -> bool:
        return self.layers.get(name, "").startswith(ACTIVE)

    def off(self) -> dict[str, str]:
        """The layers that are not on, with the reason."""
        return {name: value for name, value in self.layers.items() if not value.startswith(ACTIVE)}

    def missing(self) -> dict[str, str]:
        """The layers this machine could not turn on (not those the policy leaves off on purpose)."""
        return {name: value for name, value in self.off().items() if value != LAYER_DISABLED}

    def summary(self) -> str:
        on = [name for name in self.layers if self.active(name)]
        off = [f"{name} ({value.removeprefix('off: ')})" for name, value in self.off().items()]
        return "on: " + (", ".join(on) or "none") + ("; off: " + "; ".join(off) if off else "")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SandboxReport:
        return cls(
            layers=dict(data.get("layers", {})),
            notes=list(data.get("notes", [])),
            host_pid=data.get("host_pid"),
            seconds=float(data.get("seconds", 0.0)),
        )


# --- default policy ---------------------------------------------------------------------------
def default_policy(
    backend: str,
    scratch: str,
    *,
    extra_read: Iterable[str] = (),
    extra_exec: Iterable[str] = (),
    keep_fds: tuple[int, ...] | None = None,
    relay_fds: tuple[int, ...] = (),
    pid_namespace: bool | None = None,
) -> SandboxPolicy:
    """The policy of an evaluator child of ``backend`` (``interpreter``, ``cuda`` or ``npu``).

    Reads: the Python standard library and ``sys.path``, the packages torch, triton, numpy and
    this one (and ``torch_npu`` / ``triton_ascend`` on npu), the system's libraries and the loader
    cache; on devices also ``/sys``, the headers and programs Triton's launcher build needs, and
    CUDA / Ascend toolkits. Executes: nothing on the interpreter (its scratch directory is also
    ``noexec``); on devices Triton's toolchain (ptxas & co., the C compiler Triton picks (``CC``,
    ``cc``, ``gcc``, ``clang``) with its prefix, ``as``, ``ld``, ``ldconfig``, ``file`` (Python's
    ``platform.architecture()`` runs it and Triton's launcher cache key depends on it), and the
    interpreter of any of them that is a script (``/bin/sh`` for a wrapper ``gcc``); the scratch
    directory stays mappable there (Triton loads its compiled launchers from the cache). The
    task suites' solutions are hidden. Computed once per backend (nothing is imported to find
    the packages).

    ``pid_namespace`` (None: the backend's default) is on for the interpreter only: CUDA does not
    initialise in a PID namespace owned by a user namespace (error 304 on an H200, driver 580,
    whatever ``/proc`` is mounted); there signals out of the sandbox are refused by Landlock's
    scoping and ptrace-style access by Landlock and seccomp, but ``/proc`` lists the host's
    processes (read-only).
    """
    if backend not in BACKENDS:
        raise SandboxError(f"unknown backend {backend!r} (one of {', '.join(BACKENDS)})")
    read, exec_paths, devices, hidden = default_paths(backend)
    return SandboxPolicy(
        scratch=scratch,
        read_paths=read + tuple(extra_read),
        exec_paths=exec_paths + tuple(extra_exec),
        device_paths=devices,
        hidden_paths=hidden,
        pid_namespace=backend == "interpreter" if pid_namespace is None else pid_namespace,
        keep_fds=keep_fds,
        relay_fds=relay_fds,
    )


# --- entering ---------------------------------------------------------------------------------
def _check_policy(policy: SandboxPolicy) -> None:
    if not os.path.isabs(policy.scratch) or not os.path.isdir(policy.scratch):
        raise SandboxError(f"the scratch directory must be an existing absolute path: {policy.scratch!r}")
    if os.path.realpath(policy.scratch) == "/":
        raise SandboxError("the scratch directory cannot be /")
    for path in (*policy.read_paths, *policy.exec_paths, *policy.device_paths, *policy.hidden_paths):
        if not os.path.isabs(path):
            raise SandboxError(f"sandbox paths must be absolute: {path!r}")
        if os.path.realpath(path) in ("/", "/proc", "/dev"):
            raise SandboxError(f"{path!r} cannot be allowed as a whole (the sandbox makes its own /proc and /dev)")
    if policy.keep_fds is not None and not set(policy.relay_fds) <= set(policy.keep_fds):
        raise SandboxError("relay_fds must be kept open (a subset of keep_fds)")
    unknown = set(policy.layers) - set(LAYERS)
    if unknown:
        raise SandboxError(f"unknown sandbox layers: {sorted(unknown)}")
    threads = len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else 1
    if threads > 1:
        raise SandboxError(f"enter_os_sandbox needs a single-threaded process (fork first); this one has {threads}")


def _why(exc: OSError | int) -> str:
    number = exc if isinstance(exc, int) else (exc.errno or 0)
    return f"{errno.errorcode.get(number, number)} ({os.strerror(number)})"


def _unshare(policy: SandboxPolicy, report: SandboxReport) -> None:
    """Create the namespaces: all at once with a user namespace, else one by one (privileged)."""
    wanted = {name: flag for name, flag in _NAMESPACE_FLAGS.items() if name in policy.layers}
    if not policy.pid_namespace:
        wanted.pop("pid_ns", None)
    flags = 0
    for flag in wanted.values():
        flags |= flag
    user_error = LAYER_DISABLED.removeprefix("off: ")
    if "user_ns" in policy.layers:
        uid, gid = os.getuid(), os.getgid()
        try:
            calls.unshare(calls.CLONE_NEWUSER | flags)
        except OSError as exc:
            user_error = f"unshare(CLONE_NEWUSER) failed: {_why(exc)}; user namespaces are off on this machine"
        else:
            calls.write_id_maps(uid, gid)
            report.layers["user_ns"] = f"{ACTIVE} (uid {uid} is root inside)"
            for name in wanted:
                report.layers[name] = ACTIVE
    if "user_ns" not in report.layers:
        report.layers["user_ns"] = f"off: {user_error}"
        for name, flag in wanted.items():
            try:
                calls.unshare(flag)
                report.layers[name] = f"{ACTIVE} (without a user namespace: privileged)"
            except OSError as exc:
                report.layers[name] = f"off: needs a user namespace or CAP_SYS_ADMIN ({_why(exc)})"
    for name in _NAMESPACE_FLAGS:
        report.layers.setdefault(name, LAYER_DISABLED)


def _enter_pid_namespace(report: SandboxReport, scratch: str, relay_fds: tuple[int, ...]) -> None:
    """Fork into the new PID namespace; the outer process waits and ends as the inner one ends.

    The inner process dies with the outer one (``PR_SET_PDEATHSIG``; a pidfd closes the race of
    an outer process gone before that is armed). No descriptor of the outer process's stays open
    in the inner one; each of ``relay_fds`` is replaced there by a pipe the outer process feeds.
    """
    parent_fd = os.open(os.path.dirname(scratch), os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        outer = os.pidfd_open(os.getpid())
    except (AttributeError, OSError):
        outer = -1  # kernels before 5.3: the race stays open
    relays = [(fd, *os.pipe()) for fd in relay_fds]
    pid = os.fork()
    if pid:
        if outer >= 0:
            os.close(outer)
        for _, read_end, _ in relays:
            os.close(read_end)
        _outer_process(pid, parent_fd, os.path.basename(scratch), {fd: write_end for fd, _, write_end in relays})
    os.close(parent_fd)
    calls.prctl(calls.PR_SET_PDEATHSIG, signal.SIGKILL)
    if outer >= 0:
        gone, _, _ = select.select([outer], [], [], 0)
        os.close(outer)
        if gone:
            os._exit(1)
    for fd, read_end, write_end in relays:
        os.dup2(read_end, fd, inheritable=os.get_inheritable(fd))
        os.close(read_end)
        os.close(write_end)
    report.host_pid = _host_pid()


def _host_pid() -> int | None:
    """This process's pid in the outermost namespace (read while ``/proc`` is still the host's)."""
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith("NSpid:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def _relay(pid: int, relays: dict[int, int]) -> None:
    """Pass what arrives on each relayed descriptor on to the inner process until it ends."""
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    try:
        watch = os.pidfd_open(pid)
    except (AttributeError, OSError):
        watch = -1
    while relays:
        ready, _, _ = select.select([*relays, *([watch] if watch >= 0 else [])], [], [], None if watch >= 0 else 0.05)
        if watch in ready or (watch < 0 and os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)):
            break
        for source in ready:
            try:
                data = os.read(source, 1 << 16)
                view = memoryview(data)
                while view:
                    view = view[os.write(relays[source], view) :]
            except OSError:
                data = b""
            if not data:  # end of input, or the inner process stopped reading: pass the end on
                os.close(relays.pop(source))


def _outer_process(pid: int, parent_fd: int, scratch_name: str, relays: dict[int, int]) -> None:
    """The outer process: relay, wait for the inner one, then end exactly as it ended.

    It keeps no descriptor but its relays (the result pipe, output files stay the inner one's).

    The inner process cannot remove its scratch directory (a mount point there); when it left
    the directory empty (a spare child whose zygote went away), it is removed here.
    """
    try:
        _close_all_but({parent_fd, *relays, *relays.values()})
        if relays:
            _relay(pid, relays)
        _, status = os.waitpid(pid, 0)
    except BaseException:  # noqa: BLE001 - whatever happens here, never run the caller's code
        os._exit(70)
    try:
        os.rmdir(scratch_name, dir_fd=parent_fd)
    except OSError:
        pass  # not empty (output kept for the caller) or already removed
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            import resource

            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            signal.signal(sig, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
            os.kill(os.getpid(), sig)
        except (OSError, ValueError):
            pass
        os._exit(128 + sig)
    os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


def _close_all_but(keep: set[int]) -> None:
    """Close every descriptor above 2 except ``keep`` (without listing /proc: it may be another's now)."""
    low = 3
    for fd in sorted(k for k in keep if k >= 3):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 1 << 20)


def _close_other_fds(keep: tuple[int, ...]) -> None:
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def _set_layer(report: SandboxReport, policy: SandboxPolicy, name: str, action: Any) -> None:
    """Run ``action`` for layer ``name`` (returns the detail, or raises OSError) and record the outcome."""
    if name not in policy.layers:
        report.layers[name] = LAYER_DISABLED
        return
    try:
        detail = action()
    except calls.LayerUnavailableError as exc:
        report.layers[name] = f"off: {exc}"
    except OSError as exc:
        report.layers[name] = f"off: {_why(exc)}"
    else:
        report.layers[name] = ACTIVE + (f" ({detail})" if detail else "")


def enter_os_sandbox(policy: SandboxPolicy) -> SandboxReport:
    """Put the calling process (a fresh, single-threaded child) in the OS sandbox for good.

    Call it before any device initialisation and before candidate code. Open descriptors (the
    result pipe, stdout) keep working; paths opened afterwards must be allowed by ``policy``.
    The working directory becomes the scratch directory. With a PID namespace the function
    returns in a new process (PID 1 inside); the calling process waits for it and exits with its
    status, never returning.

    Raises:
        SandboxError: on misuse (bad policy, several threads, a second call). A missing facility
            never raises: its layer is reported off.
    """
    global _ENTERED
    if _ENTERED:
        raise SandboxError("this process is already in an OS sandbox")
    _check_policy(policy)
    started = time.perf_counter()
    _ENTERED = True
    report = SandboxReport()
    if policy.keep_fds is not None:
        _close_other_fds(policy.keep_fds)
    scratch = os.path.realpath(policy.scratch)
    _unshare(policy, report)
    if report.active("pid_ns"):
        _enter_pid_namespace(report, scratch, policy.relay_fds)
    if report.active("mount_ns"):
        builder = RootBuilder(scratch, policy.shm_mb, fresh_proc=report.active("pid_ns"))
        try:
            notes = builder.build(
                read=policy.read_paths,
                exec_paths=policy.exec_paths,
                devices=calls.expand_globs(policy.device_paths),
                hidden=policy.hidden_paths,
                scratch_noexec=not policy.allow_exec,
            )
            report.notes += notes
            report.layers["mount_ns"] = f"{ACTIVE} (new root: {builder.mounts} mounts{builder.mode})"
        except OSError as exc:
            builder.roll_back()
            report.layers["mount_ns"] = f"off: the new root could not be built: {exc}"
        if report.active("pid_ns") and not builder.proc_mounted:
            report.notes.append("/proc still shows the host's processes (no private /proc)")
    os.chdir(scratch)
    _set_layer(report, policy, "capabilities", calls.drop_capabilities)
    _set_layer(report, policy, "no_new_privs", lambda: calls.prctl(calls.PR_SET_NO_NEW_PRIVS, 1))
    _set_layer(report, policy, "not_dumpable", lambda: calls.prctl(calls.PR_SET_DUMPABLE, 0))
    _set_layer(
        report,
        policy,
        "landlock",
        lambda: calls.apply_landlock(
            read=policy.read_paths,
            exec_paths=policy.exec_paths,
            devices=calls.expand_globs(policy.device_paths),
            # /dev/shm is a private tmpfs inside the mount namespace (the host's one otherwise)
            writable=(scratch, "/dev/shm") if report.active("mount_ns") else (scratch,),  # noqa: S108
        ),
    )
    _set_layer(report, policy, "seccomp", lambda: calls.apply_seccomp(policy.allow_exec))
    report.layers = {name: report.layers[name] for name in LAYERS}
    report.seconds = round(time.perf_counter() - started, 6)
    return report


# --- probing ----------------------------------------------------------------------------------
def _probe_in_child(write_fd: int, scratch: str, backend: str) -> None:
    try:
        policy = default_policy(backend, scratch, keep_fds=(write_fd,))
        report = enter_os_sandbox(policy)
        payload = {"report": report.to_dict()}
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        payload = {"error": f"{type(exc).__name__}: {exc}"}
    os.write(write_fd, json.dumps(payload).encode())
    os._exit(0)


@functools.cache
def probe_os_sandbox(backend: str = "interpreter") -> SandboxReport:
    """Which layers work on this machine: enters ``backend``'s default sandbox once in a throwaway
    child that touches no device (cached per backend).

    Never raises: an unexpected failure is reported as every layer off with the reason.
    """
    scratch = tempfile.mkdtemp(prefix="akg-probe-")
    read_fd, write_fd = os.pipe()
    try:
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            try:
                _probe_in_child(write_fd, scratch, backend)
            finally:
                os._exit(70)
        os.close(write_fd)
        chunks = []
        while chunk := os.read(read_fd, 1 << 16):
            chunks.append(chunk)
        os.waitpid(pid, 0)
        payload = json.loads(b"".join(chunks) or b'{"error": "the probe child died"}')
    except (OSError, ValueError) as exc:
        payload = {"error": f"{type(exc).__name__}: {exc}"}
    finally:
        os.close(read_fd)
        shutil.rmtree(scratch, ignore_errors=True)
    if "report" in payload:
        return SandboxReport.from_dict(payload["report"])
    return SandboxReport(layers=dict.fromkeys(LAYERS, f"off: the probe failed: {payload['error']}"))
