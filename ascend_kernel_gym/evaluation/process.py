"""Process set-up of an evaluation child: limits, descriptors, environment, OS sandbox, device.

A child forked ahead of its job (the zygote's spare) runs :func:`prepare` before the job
arrives; the evaluation itself then only sets its memory limit (:func:`limit_memory`). The
child's printed output goes to a file in its sandbox through :class:`RollingOutput`.

Order matters: everything the child needs from outside its scratch directory (output file,
``/dev/null`` as stdin, the warm Triton cache's copy, the environment, the pipes) is set up
first; then the child enters the OS sandbox (:mod:`.os_sandbox`: from there on it reads only
the libraries and writes only its scratch directory); only then is the device initialised and,
later, the task and the candidate imported.

Imports torch: only the zygote and its children import this module.
"""

from __future__ import annotations

import io
import os
import resource
import shutil
import signal
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import torch

from ascend_kernel_gym.backends import interpreter_memcheck
from ascend_kernel_gym.evaluation import cuda_sync
from ascend_kernel_gym.evaluation.errors import StageError
from ascend_kernel_gym.evaluation.job import Job
from ascend_kernel_gym.evaluation.os_sandbox import SandboxReport, default_policy, enter_os_sandbox
from ascend_kernel_gym.evaluation.os_sandbox_paths import BASE_DEVICES
from ascend_kernel_gym.evaluation.result import ErrorType
from ascend_kernel_gym.evaluation.wire import OUTPUT_FILENAME, ZygoteLink

ENV_KEEP = (
    "PATH",
    "LANG",
    "LC_ALL",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_HOME",
    "CUDA_PATH",
    "CUDA_DEVICE_MAX_CONNECTIONS",
    "LD_LIBRARY_PATH",
    "TRITON_INTERPRET",
    "TRITON_PTXAS_PATH",
    "TRITON_LIBCUDA_PATH",
    "ASCEND_HOME_PATH",
    "ASCEND_TOOLKIT_HOME",
    "ASCEND_OPP_PATH",
    "ASCEND_AICPU_PATH",
    "ASCEND_RT_VISIBLE_DEVICES",
    "ASCEND_VISIBLE_DEVICES",
    "PYTHONHASHSEED",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
)


#: the printed-output file starts over (with a note) before it would grow past this many bytes
OUTPUT_ROLL_BYTES = 16 * 1024 * 1024


class RollingOutput(io.TextIOBase):
    """``sys.stdout`` and ``sys.stderr`` of a child: text written straight to the output file.

    Before a write would make the file larger than ``limit`` bytes, the file is emptied and
    starts with a note of how much was cut, so no amount of printing makes a write fail (the file
    size limit of the child would) and the file always ends with the latest output, which is what
    the result keeps. ``fd`` must be open with ``O_APPEND`` on ``path``.
    """

    def __init__(self, fd: int, path: str, limit: int = OUTPUT_ROLL_BYTES) -> None:
        super().__init__()
        self._fd = fd
        self._path = path
        self._limit = limit
        self._note = 0  # bytes of the note at the start of the file
        #: bytes of output no longer in the file
        self.cut = 0

    @property
    def encoding(self) -> str:
        return "utf-8"

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self._fd

    def flush(self) -> None:
        return None

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        data = text.encode("utf-8", errors="replace")
        size = os.fstat(self._fd).st_size
        if size + len(data) > self._limit:
            keep = data[-(self._limit // 2) :]
            self.cut += size - self._note + len(data) - len(keep)  # the previous note is not output
            with open(self._path, "wb"):
                pass  # emptied; writes through fd (O_APPEND) go to the new end
            note = f"[... {self.cut} bytes of earlier output cut ...]\n".encode()
            self._note = len(note)
            data = note + keep
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]
        return len(text)


@dataclass
class ChildSetup:
    """What a child prepares before its job arrives: the same for every job of one zygote.

    ``os_sandbox``: enter the OS sandbox (a missing facility only turns its layer off).
    ``keep_fds``: the descriptors above 2 the child keeps (its job pipe first, then its result
    pipe); every other one is closed when it enters the OS sandbox. None: none is closed.
    ``devices``: whether the OS sandbox lets the child open the backend's device nodes (a
    precompile child, :mod:`.precompile`, has none).
    """

    sandbox: str
    backend: str
    warm_cache: str | None = None
    torch_threads: int = 1
    os_sandbox: bool = False
    keep_fds: tuple[int, ...] | None = None
    devices: bool = True


@dataclass
class Prepared:
    """A child's state once set up and with its device initialised (or the error that stopped it)."""

    device: torch.device | None = None
    error: BaseException | None = None
    #: seconds spent on set-up and device initialisation
    durations: dict[str, float] = field(default_factory=dict)
    #: ``time.monotonic()`` when the child was ready for its job
    ready_at: float = 0.0
    #: the pipes to the zygote (None in a stand-alone child)
    link: ZygoteLink | None = None
    #: which OS sandbox layers are on (None: the sandbox was not asked for)
    os_sandbox: SandboxReport | None = None
    #: the process's resident set when it started (forked): what it grows past this counts
    #: against the job's host-memory cap
    start_rss: int = 0


def prepare_host(setup: ChildSetup, prepared: Prepared) -> None:
    """The set-up without the device: limits, descriptors, environment, OS sandbox, threads (raises)."""
    started = time.perf_counter()
    _setup_process(setup)
    after_setup = time.perf_counter()
    prepared.durations["setup"] = round(after_setup - started, 4)
    if setup.os_sandbox:
        prepared.os_sandbox = enter_sandbox(setup)
        prepared.durations["os_sandbox"] = round(time.perf_counter() - after_setup, 4)
    torch.set_num_threads(max(1, setup.torch_threads))


def prepare(setup: ChildSetup) -> Prepared:
    """Set the process up and initialise the device; never raises (the error is kept for the job)."""
    prepared = Prepared(start_rss=own_rss_bytes())
    try:
        prepare_host(setup, prepared)
        after_setup = time.perf_counter()
        prepared.device = init_device(setup.backend)
        if setup.backend == "interpreter" and not interpreter_memcheck.install():  # fails closed
            raise RuntimeError("the interpreter's memory check could not be installed in the child")
        if setup.backend != "interpreter" and setup.warm_cache:
            _warm_launch_path(prepared.device)
        prepared.durations["device_init"] = round(time.perf_counter() - after_setup, 4)
    except BaseException as exc:  # noqa: BLE001 - reported when the job arrives
        prepared.error = exc
    prepared.ready_at = time.monotonic()
    return prepared


def _warm_launch_path(device: torch.device) -> None:
    """Load Triton's launch path with the warm cache's kernels (an optimisation only)."""
    try:
        from ascend_kernel_gym.evaluation import warmup

        warmup.run_child_warmup(device)
    except Exception:  # noqa: BLE001, S110 - the candidate's first call then pays for it
        pass


def _setup_process(setup: ChildSetup) -> None:
    sandbox = setup.sandbox
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # over-long output fails the write instead of killing
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    fsize = 256 * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    output = os.path.join(sandbox, OUTPUT_FILENAME)
    _redirect(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, (1, 2))
    sys.stdout = sys.stderr = RollingOutput(1, output)
    _redirect(os.devnull, os.O_RDONLY, (0,))
    tmp = os.path.join(sandbox, "tmp")
    cache = os.path.join(sandbox, "triton_cache")
    os.makedirs(tmp, exist_ok=True)
    if setup.warm_cache and os.path.isdir(setup.warm_cache):
        shutil.copytree(setup.warm_cache, cache, dirs_exist_ok=True)
    os.makedirs(cache, exist_ok=True)
    keep = {k: v for k, v in os.environ.items() if k in ENV_KEEP}
    os.environ.clear()
    os.environ.update(keep)
    os.environ.update(
        {
            "HOME": sandbox,
            "TMPDIR": tmp,
            "TRITON_CACHE_DIR": cache,
            "TRITON_HOME": sandbox,
            "TRITON_DUMP_DIR": os.path.join(sandbox, "triton_dump"),
            "TRITON_OVERRIDE_DIR": os.path.join(sandbox, "triton_override"),
        }
    )
    import tempfile

    tempfile.tempdir = tmp
    os.chdir(sandbox)
    sys.dont_write_bytecode = True


def enter_sandbox(setup: ChildSetup) -> SandboxReport:
    """Put this child in the OS sandbox of its backend (see :mod:`.os_sandbox`).

    The warm cache stays readable: Triton's cache index names its files by absolute path. With
    a PID namespace (the interpreter) this returns in a new process; the job pipe
    (``keep_fds[0]``) is relayed to it by the outer process, which the zygote watches.
    """
    keep = setup.keep_fds
    policy = default_policy(
        setup.backend,
        setup.sandbox,
        extra_read=(setup.warm_cache,) if setup.warm_cache else (),
        keep_fds=keep,
        relay_fds=keep[:1] if keep else (),
    )
    if not setup.devices:
        policy = policy.replace(device_paths=BASE_DEVICES)
    return enter_os_sandbox(policy)


def _redirect(path: str, flags: int, targets: tuple[int, ...]) -> None:
    """Open ``path`` onto each of the ``targets`` descriptors (which may be closed now)."""
    fd = os.open(path, flags, 0o600)
    for target in targets:
        if fd != target:
            os.dup2(fd, target)
    if fd not in targets:
        os.close(fd)


def limit_memory(job: Job) -> None:
    """Cap the address space at ``job.memory_mb`` beyond what the child uses now (interpreter only)."""
    if job.backend == "interpreter" and job.memory_mb > 0:
        # Address-space cap on the CPU only: CUDA / NPU runtimes reserve huge virtual ranges,
        # there the zygote watches the resident set instead.
        cap_address_space(job.memory_mb)


def cap_address_space(memory_mb: int) -> None:
    """Cap this process's address space at ``memory_mb`` beyond what it uses now (a process
    without a device runtime's reservations: the interpreter's children, a precompile child)."""
    limit = _vm_size_bytes() + memory_mb * 1024 * 1024
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        # A process that serves several jobs (the judging reference child) keeps its first
        # cap: a hard limit cannot be raised again.
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def own_rss_bytes() -> int:
    """This process's resident set in bytes (0 where ``/proc`` cannot be read)."""
    try:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _vm_size_bytes() -> int:
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def library_dirs(backend: str) -> tuple[str, ...]:
    """Package directories whose code may start the compiler subprocesses (for the sandbox guard)."""
    dirs = []
    import triton

    dirs.append(os.path.dirname(triton.__file__))
    if backend == "npu":
        for name in ("torch_npu", "triton_ascend"):
            module = sys.modules.get(name)
            if module is not None and getattr(module, "__file__", None):
                dirs.append(os.path.dirname(module.__file__))
    return tuple(dirs)


def _initialised_device_module(backend: str) -> Any:
    """``torch.cuda`` / ``torch.npu`` once initialised in this process, else None."""
    module = getattr(torch, backend, None) if backend in ("cuda", "npu") else None
    return module if module is not None and module.is_initialized() else None


def device_peak_bytes(backend: str, reset: bool = False) -> int | None:
    """The most device memory this process's caching allocator has reserved (since the last
    reset), or None on the CPU or before the device is initialised; ``reset``: start over."""
    try:
        module = _initialised_device_module(backend)
        if module is None:
            return None
        peak = int(module.max_memory_reserved())
        if reset:
            module.reset_peak_memory_stats()
        return peak
    except Exception:  # noqa: BLE001 - a lost device: no reading
        return None


def device_reserved_bytes(backend: str) -> int | None:
    """The device memory this process's caching allocator holds now, or None on the CPU or before
    the device is initialised."""
    try:
        module = _initialised_device_module(backend)
        return int(module.memory_reserved()) if module is not None else None
    except Exception:  # noqa: BLE001 - a lost device: no reading
        return None


def init_device(backend: str) -> torch.device:
    """Initialise the backend's device 0 (its context created) and return it; the CPU for the interpreter."""
    if backend == "interpreter":
        return torch.device("cpu")
    if backend == "cuda":
        cuda_sync.before_context()
        torch.cuda.init()
        torch.cuda.set_device(0)
        torch.empty(1, device="cuda")  # create the context before any timing
        return torch.device("cuda", 0)
    if backend == "npu":
        import torch_npu  # noqa: F401

        torch.npu.set_device(0)
        torch.empty(1, device="npu")
        return torch.device("npu", 0)
    raise StageError(ErrorType.HARNESS_ERROR, f"unknown backend {backend!r}")


def device_name(backend: str) -> str:
    """The device's name for the result (the backend's name when it cannot be read)."""
    try:
        if backend == "cuda":
            return str(torch.cuda.get_device_name(0))
        if backend == "npu":
            return str(torch.npu.get_device_name(0))
    except Exception:  # noqa: BLE001
        return backend
    import platform

    return f"CPU ({platform.machine()}, Triton interpreter)"
