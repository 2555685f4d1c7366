"""The evaluation that runs inside one forked evaluator child.

The zygote (:mod:`.zygote`) forks a fresh child per evaluation and calls :func:`child_main`.
The child sets its limits, scrubs its environment, loads the task, installs the launch /
operator recorder and the sandbox guard, imports the candidate, and runs the compile,
correctness and (on devices) profiling stages. It reports exactly one result message through a
pipe and ends with ``os._exit``; nothing it does can reach the zygote or the calling process.

Imports torch and triton: only the zygote and its children import this module.
"""

from __future__ import annotations

import contextlib
import copy
import gc
import io
import json
import operator
import os
import random
import resource
import select
import shutil
import signal
import struct
import sys
import time
import traceback
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, NoReturn

import torch

from ascend_kernel_gym.evaluation import correctness as cx
from ascend_kernel_gym.evaluation import placement
from ascend_kernel_gym.evaluation.errors import (
    REFERENCE_BROKE_DEVICE,
    StageError,
    classify_exception,
    describe_exception,
)
from ascend_kernel_gym.evaluation.feedback import scrub_text
from ascend_kernel_gym.evaluation.guard import SandboxGuard
from ascend_kernel_gym.evaluation.job import Job
from ascend_kernel_gym.evaluation.livecheck import check_live_paths
from ascend_kernel_gym.evaluation.recorder import Recorder, copied_input_piece
from ascend_kernel_gym.evaluation.result import HACK_ERROR_TYPES, ErrorType, EvalResult, Stage
from ascend_kernel_gym.evaluation.sandbox_rules import FILL_TORCH_OPS
from ascend_kernel_gym.tasks.runtime import instantiate
from ascend_kernel_gym.tasks.task import AUTO_SMALL_TAG

CANDIDATE_MODULE = "akg_candidate"
CANDIDATE_FILENAME = "kernel.py"
MAX_MESSAGE_CHARS = 4000
ENV_KEEP = (
    "PATH",
    "LANG",
    "LC_ALL",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_HOME",
    "CUDA_PATH",
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


class ResultWriter:
    """Writes the one result message (length + JSON) to the zygote and ends the process.

    ``marker``: bytes written first (the zygote's RESULT marker; empty for a stand-alone child).
    """

    def __init__(self, fd: int, token: str, marker: bytes = b"") -> None:
        self.fd = fd
        self.token = token
        self.marker = marker
        self.done = False

    def emit(self, result: EvalResult) -> NoReturn:
        if not self.done:
            self.done = True
            payload = json.dumps({"token": self.token, "result": result.to_dict()}).encode()
            data = self.marker + struct.pack("<Q", len(payload)) + payload
            view = memoryview(data)
            while view:
                written = os.write(self.fd, view)
                view = view[written:]
        os._exit(0)


class _PartTimer:
    """Records the seconds since the previous mark as ``<stage>.<part>`` (latency work only)."""

    def __init__(self, durations: dict[str, float], stage: str) -> None:
        self.durations = durations
        self.stage = stage
        self.last = time.perf_counter()

    def __call__(self, part: str) -> None:
        now = time.perf_counter()
        self.durations[f"{self.stage}.{part}"] = round(now - self.last, 4)
        self.last = now


@dataclass
class _State:
    job: Job
    result: EvalResult
    writer: ResultWriter
    sandbox: str = ""
    candidate_file: str = ""
    recorder: Recorder | None = None
    snapshot: LibrarySnapshot | None = None
    redirect: Any = None
    #: the reference in float32 for float16 / bfloat16 outputs (False: unavailable)
    reference_hi: Any = None
    link: ZygoteLink | None = None
    t_stage: float = field(default_factory=time.perf_counter)

    def stage(self, stage: Stage) -> None:
        now = time.perf_counter()
        previous = self.result.stage.value
        self.result.stage_durations[previous] = round(
            self.result.stage_durations.get(previous, 0.0) + now - self.t_stage, 4
        )
        self.t_stage = now
        self.result.stage = stage

    def finish(self) -> NoReturn:
        self.stage(self.result.stage)
        if self.recorder is not None:
            self.result.launches = list(self.recorder.launches)
            self.result.torch_ops = sorted(self.recorder.ops)
        self.result.error_message = scrub_text(self.result.error_message, self.sandbox)[:MAX_MESSAGE_CHARS]
        # Warnings and hack reasons may quote exception texts of candidate code (sandbox paths).
        self.result.warnings = [scrub_text(w, self.sandbox)[:MAX_MESSAGE_CHARS] for w in self.result.warnings]
        self.result.hack_reasons = [scrub_text(r, self.sandbox) for r in self.result.hack_reasons]
        self.result.output_tail = _read_output(self.sandbox, self.job.output_cap)
        self.writer.emit(self.result)


def _read_output(sandbox: str, cap: int) -> str:
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    path = os.path.join(sandbox, "output.txt")
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - cap))
            data = handle.read(cap)
    except OSError:
        return ""
    text = data.decode("utf-8", errors="replace")
    if size > cap:
        text = f"[... {size - cap} bytes cut ...]\n" + text
    return scrub_text(text, sandbox)


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


# --- process setup ----------------------------------------------------------------------------


@dataclass
class ChildSetup:
    """What a child prepares before its job arrives: the same for every job of one zygote."""

    sandbox: str
    backend: str
    warm_cache: str | None = None
    torch_threads: int = 1


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


class ZygoteLink:
    """A forked child's side of its two pipes to the zygote."""

    def __init__(self, job_fd: int, result_fd: int) -> None:
        self.job_fd = job_fd
        self.result_fd = result_fd

    def send(self, control: bytes) -> None:
        os.write(self.result_fd, control)

    def wait_quiet(self) -> float:
        """Ask for a quiet device (no sibling starting or ending a context); seconds waited."""
        from ascend_kernel_gym.evaluation.zygote import GO, QUIET, QUIET_MAX_S

        started = time.perf_counter()
        try:
            self.send(QUIET)
            deadline = started + QUIET_MAX_S + 1.0
            while (left := deadline - time.perf_counter()) > 0:
                ready, _, _ = select.select([self.job_fd], [], [], left)
                if ready and os.read(self.job_fd, 1) in (GO, b""):
                    break
        except OSError:
            pass
        return round(time.perf_counter() - started, 4)


def prepare(setup: ChildSetup) -> Prepared:
    """Set the process up and initialise the device; never raises (the error is kept for the job)."""
    prepared = Prepared()
    started = time.perf_counter()
    try:
        _setup_process(setup)
        after_setup = time.perf_counter()
        prepared.durations["setup"] = round(after_setup - started, 4)
        prepared.device = _init_device(setup.backend)
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


def child_entry(setup: ChildSetup, job_fd: int, result_fd: int) -> NoReturn:
    """Entry point of a forked child: prepare, wait for the job on ``job_fd``, evaluate it.

    A child forked ahead of its job (the zygote's spare) does the set-up and the device
    initialisation while the previous evaluation runs; an end of file instead of a job (the
    zygote closed or died) ends it quietly.
    """
    try:
        os.setpgid(0, 0)
    except OSError:
        pass
    prepared = prepare(setup)
    from ascend_kernel_gym.evaluation.zygote import JOB_TAKEN, READY, read_message

    link = ZygoteLink(job_fd, result_fd)
    try:
        link.send(READY)
        message = read_message(job_fd)
    except Exception:  # noqa: BLE001 - a broken pipe from the zygote
        message = None
    if not isinstance(message, dict) or "job" not in message:
        shutil.rmtree(setup.sandbox, ignore_errors=True)  # the zygote closed (or died) before a job came
        os._exit(0)
    link.send(JOB_TAKEN)
    prepared.link = link
    waited = max(0.0, prepared.ready_at - float(message.get("sent_at", prepared.ready_at)))
    prepared.durations["waited"] = round(waited, 4)
    child_main(message["job"], result_fd, str(message.get("token", "")), prepared)


def _setup_process(setup: ChildSetup) -> None:
    sandbox = setup.sandbox
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # over-long output fails the write instead of killing
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    fsize = 256 * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    output = os.path.join(sandbox, "output.txt")
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
    torch.set_num_threads(max(1, setup.torch_threads))


def _redirect(path: str, flags: int, targets: tuple[int, ...]) -> None:
    """Open ``path`` onto each of the ``targets`` descriptors (which may be closed now)."""
    fd = os.open(path, flags, 0o600)
    for target in targets:
        if fd != target:
            os.dup2(fd, target)
    if fd not in targets:
        os.close(fd)


def _limit_memory(job: Job) -> None:
    if job.backend == "interpreter" and job.memory_mb > 0:
        # Address-space cap on the CPU only: CUDA / NPU runtimes reserve huge virtual ranges,
        # there the zygote watches the resident set instead.
        limit = _vm_size_bytes() + job.memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _vm_size_bytes() -> int:
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _library_dirs(backend: str) -> tuple[str, ...]:
    dirs = []
    import triton

    dirs.append(os.path.dirname(triton.__file__))
    if backend == "npu":
        for name in ("torch_npu", "triton_ascend"):
            module = sys.modules.get(name)
            if module is not None and getattr(module, "__file__", None):
                dirs.append(os.path.dirname(module.__file__))
    return tuple(dirs)


# --- library snapshot (monkeypatch detection) ------------------------------------------------


HARNESS_PACKAGE = "ascend_kernel_gym"


class LibrarySnapshot:
    """Identities of public callables of torch / triton namespaces (and of every callable of the
    harness's own modules), to detect monkeypatching."""

    def __init__(self) -> None:
        self.namespaces = self._namespaces()
        self.ids = self._take()
        self._contents = self._dict_contents()

    @staticmethod
    def _namespaces() -> dict[str, Any]:
        import triton
        import triton.language as tl

        spaces: dict[str, Any] = {
            **{name: module for name, module in sys.modules.items() if name.startswith(HARNESS_PACKAGE + ".")},
            "torch": torch,
            "torch.nn.functional": torch.nn.functional,
            "torch.Tensor": torch.Tensor,
            "torch.nn.Module": torch.nn.Module,
            "torch.testing": torch.testing,
            "torch.linalg": torch.linalg,
            "triton": triton,
            "triton.language": tl,
        }
        for device_type in ("cuda", "npu"):
            module = getattr(torch, device_type, None)
            if module is not None and hasattr(module, "Event"):
                spaces[f"torch.{device_type}"] = module
                spaces[f"torch.{device_type}.Event"] = module.Event
        return spaces

    def _take(self) -> dict[tuple[str, str], int]:
        ids: dict[tuple[str, str], int] = {}
        for label, space in self.namespaces.items():
            if isinstance(space, type):
                # Classes: every public and dunder name along the MRO (first owner wins), so an
                # attribute put on torch.Tensor in front of an inherited method is seen too.
                for klass in space.__mro__:
                    for name, value in klass.__dict__.items():
                        key = (label, name)
                        if key in ids or (name.startswith("_") and not name.endswith("__")):
                            continue
                        ids[key] = id(value)
            else:
                # The harness's own modules: private helpers too (``child._call_candidate``).
                own = label.startswith(HARNESS_PACKAGE + ".")
                for name, value in list(space.__dict__.items()):
                    if (own or not name.startswith("_")) and callable(value):
                        ids[(label, name)] = id(value)
        return ids

    def _dicts(self) -> list[Any]:
        """Every namespace dictionary the snapshot reads (a class's along its MRO)."""
        found = []
        for space in self.namespaces.values():
            classes = space.__mro__ if isinstance(space, type) else [space]
            found.extend(c.__dict__ for c in classes)
        return found

    def _dict_contents(self) -> list[tuple[Any, tuple[str, ...], tuple[Any, ...]]]:
        # The values themselves are kept (not their ids), so a replaced object's address cannot
        # be reused by its replacement.
        return [(d, tuple(d), tuple(d.values())) for d in self._dicts()]

    def _unchanged(self) -> bool:
        """Whether no namespace dictionary changed at all (C-speed; the exact check is slower)."""
        return all(
            len(d) == len(keys) and tuple(d) == keys and all(map(operator.is_, values, d.values()))
            for d, keys, values in self._contents
        )

    def changed(self) -> list[str]:
        if self._unchanged():
            return _global_hooks()
        now = self._take()
        changed = sorted(f"{label}.{name}" for (label, name), old in self.ids.items() if now.get((label, name)) != old)
        if not changed:
            self._contents = self._dict_contents()  # something else changed (a lazy import): the new baseline
        return changed + _global_hooks()


def _global_hooks() -> list[str]:
    """Global nn.Module hooks (they would run inside the reference model too)."""
    from torch.nn.modules import module as module_mod

    found = []
    for name in dir(module_mod):
        if name.startswith("_global_") and name.endswith("hooks"):
            hooks = getattr(module_mod, name)
            if isinstance(hooks, dict) and hooks:
                found.append(f"torch.nn.modules.module.{name}")
    return found


# --- the evaluation -----------------------------------------------------------------------------


def child_main(job: Job, result_fd: int, token: str, prepared: Prepared | None = None) -> NoReturn:
    """Evaluate ``job`` in this process and write the result to ``result_fd``. Never returns.

    ``prepared``: the set-up done before the job arrived (:func:`child_entry`); without it the
    set-up and device initialisation happen here, as part of the compile stage.
    """
    try:
        os.setpgid(0, 0)
    except OSError:
        pass
    marker = b""
    if prepared is not None and prepared.link is not None:
        from ascend_kernel_gym.evaluation.zygote import RESULT

        marker = RESULT
    writer = ResultWriter(result_fd, token, marker)
    result = EvalResult(
        task_id=job.task.id,
        backend=job.backend,
        profile=job.profile,
        code_hash=job.code_hash,
        stage=Stage.COMPILE,
        format_ok=True,
        static_ok=True,
        warnings=list(job.static_warnings),
    )
    state = _State(job=job, result=result, writer=writer, sandbox=job.sandbox, link=prepared and prepared.link)
    try:
        _evaluate(state, prepared)
    except StageError as failure:
        _apply_failure(state, failure)
    except BaseException as exc:  # noqa: BLE001 - a harness bug must still produce a result
        result.error_type = ErrorType.HARNESS_ERROR
        result.error_message = (
            "evaluator internal error: " + "".join(traceback.format_exception_only(type(exc), exc)).strip()
        )
        result.correct = False
    state.finish()


def _apply_failure(state: _State, failure: StageError) -> None:
    result = state.result
    result.error_type = failure.error_type
    result.error_message = failure.message
    result.correct = False
    for key, value in failure.metrics.items():
        if hasattr(result, key):
            setattr(result, key, value)
    if failure.error_type in HACK_ERROR_TYPES:
        result.hack = True
        result.hack_reasons.append(f"{failure.error_type.value}: {failure.message.splitlines()[0][:200]}")


def _evaluate(state: _State, prepared: Prepared | None) -> None:
    job, result = state.job, state.result
    if prepared is None:
        prepared = prepare(ChildSetup(job.sandbox, job.backend, job.warm_cache, job.torch_threads))
        # Parts of the compile stage, for latency work (the stage's own entry includes them).
        for key, value in prepared.durations.items():
            result.stage_durations[f"compile.{key}"] = value
    else:
        # Done before the job arrived (not part of this evaluation's time, unless it had to wait:
        # ``compile.waited``).
        for key, value in prepared.durations.items():
            result.stage_durations["compile.waited" if key == "waited" else f"ahead.{key}"] = value
    if prepared.error is not None:
        raise prepared.error
    assert prepared.device is not None
    device = prepared.device
    mark = _PartTimer(result.stage_durations, "compile")
    _limit_memory(job)
    result.device = _device_name(job.backend)
    try:
        task_module = instantiate(job.task, job.profile)
    except Exception as exc:  # noqa: BLE001 - a broken task is the harness's problem
        raise StageError(
            ErrorType.HARNESS_ERROR, f"the task could not be loaded: {type(exc).__name__}: {exc}"
        ) from None

    candidate_file = os.path.join(state.sandbox, CANDIDATE_FILENAME)
    state.candidate_file = candidate_file
    with open(candidate_file, "w", encoding="utf-8") as handle:
        handle.write(job.code)
    mark("task")
    recorder = Recorder(CANDIDATE_MODULE)
    recorder.install()
    state.recorder = recorder
    rng = random.Random(job.seed if job.seed is not None else int.from_bytes(os.urandom(8), "little"))
    init_seed = rng.getrandbits(31)

    state.redirect = cx.device_redirect(device)
    # The reference is built before any candidate code runs (so a failure here is ours).
    check_seed = random.Random(init_seed ^ 0x2545F491).getrandbits(62)
    try:
        init_inputs, reference = _build_reference(task_module, init_seed, device)
        mark("reference_build")
        _check_reference(state, task_module, reference, device, check_seed)
    except TaskProblemError as problem:
        raise StageError(ErrorType.HARNESS_ERROR, f"the task cannot be evaluated: {problem}") from None
    except Exception as exc:  # noqa: BLE001
        if not (job.profile == "small" and AUTO_SMALL_TAG in job.task.tags):
            raise StageError(
                ErrorType.HARNESS_ERROR,
                f"the reference model could not be built or run on the task's own inputs: {type(exc).__name__}: {exc}",
            ) from None
        result.warnings.append(
            f"the automatically derived small sizes do not fit this task ({type(exc).__name__}); evaluated with the "
            "file's own sizes (full profile)"
        )
        result.profile = "full"
        try:
            task_module = instantiate(job.task, "full")
            init_inputs, reference = _build_reference(task_module, init_seed, device)
            _check_reference(state, task_module, reference, device, check_seed)
        except TaskProblemError as problem:
            raise StageError(ErrorType.HARNESS_ERROR, f"the task cannot be evaluated: {problem}") from None
        except Exception as exc2:  # noqa: BLE001
            raise StageError(
                ErrorType.HARNESS_ERROR,
                f"the reference model could not be built or run on the task's own inputs: {type(exc2).__name__}: "
                f"{exc2}",
            ) from None

    mark("reference_check")
    check_live_paths(job.paths, job.escaping)
    if job.backend == "interpreter":
        _patch_autotune_for_interpreter()
    _settle_lazy_imports()
    mark("settle")
    snapshot = LibrarySnapshot()
    state.snapshot = snapshot
    mark("snapshot")

    def on_violation(message: str) -> NoReturn:
        _apply_failure(state, StageError(ErrorType.SANDBOX_VIOLATION, f"sandbox: your code {message}"))
        state.finish()

    guard = SandboxGuard(
        sandbox_dir=state.sandbox,
        candidate_file=candidate_file,
        backend=job.backend,
        on_violation=on_violation,
        library_dirs=_library_dirs(job.backend),
    )
    guard.install()
    mark("guard")

    # --- compile: import, construct, first call --------------------------------------------
    module = _import_candidate(job.code, candidate_file)
    _check_snapshot(snapshot)
    mark("import")
    model_cls = module.__dict__.get("ModelNew")
    if not isinstance(model_cls, type):
        raise StageError(ErrorType.MISSING_MODEL_NEW, "ModelNew is not a class after your module ran")
    try:
        torch.manual_seed(init_seed + 1)
        with device, cx.device_redirect(device):
            candidate = model_cls(*_copy_args(init_inputs))
        if isinstance(candidate, torch.nn.Module):
            candidate = torch.nn.Module.to(candidate, device)
    except BaseException as exc:  # noqa: BLE001 - candidate code
        raise StageError(_error_for(exc), "ModelNew(...) failed: " + describe_exception(exc, candidate_file)) from None
    if not callable(candidate):
        raise StageError(ErrorType.RUNTIME_ERROR, "ModelNew instances are not callable (subclass nn.Module)")
    _copy_parameters(reference, candidate)
    _check_snapshot(snapshot)
    mark("construct")

    _run_correctness(state, task_module, reference, candidate, device, rng)
    gc.enable()
    _check_snapshot(snapshot)

    # --- optional Ascend hooks (timed on their own: they are not the candidate's cost) ---------
    state.stage(state.result.stage)
    _run_ascend_hooks(state, task_module, reference, candidate, device, rng)
    state.result.stage_durations["ascend_hooks"] = round(time.perf_counter() - state.t_stage, 4)
    state.t_stage = time.perf_counter()
    _check_snapshot(snapshot)

    # --- performance ------------------------------------------------------------------------
    if job.measure_performance and (job.backend in ("cuda", "npu") or job.cpu_timing):
        state.stage(Stage.PERFORMANCE)
        _run_profiling(state, task_module, reference, candidate, device, rng)
        _check_snapshot(snapshot)
    state.stage(Stage.DONE)


def _build_reference(task_module: Any, init_seed: int, device: torch.device) -> tuple[list[Any], Any]:
    """The task's init inputs and its reference model on ``device`` (seeded like the candidate's)."""
    torch.manual_seed(init_seed)
    with cx.device_redirect(device):
        init_inputs = task_module.get_init_inputs()
    torch.manual_seed(init_seed + 1)
    with device, cx.device_redirect(device):
        reference = task_module.Model(*init_inputs)
    return init_inputs, reference.to(device)


def _patch_autotune_for_interpreter() -> None:
    """``@triton.autotune`` benchmarks with the device driver, which the interpreter has not: time
    each configuration once with the wall clock instead (any choice is valid on a CPU)."""
    try:
        from triton.runtime.autotuner import Autotuner
    except ImportError:  # pragma: no cover
        return

    def bench_once(kernel_call: Callable[[], Any], quantiles: Any = None, **_: Any) -> Any:
        start = time.perf_counter()
        kernel_call()
        ms = (time.perf_counter() - start) * 1e3
        return [ms] * len(quantiles) if quantiles else ms

    # A candidate's own ``do_bench=`` is never used (the static stage refuses it; this is the second line).
    Autotuner.do_bench = property(lambda self: bench_once)  # type: ignore[assignment]


def _settle_lazy_imports() -> None:
    """Trigger torch's lazy imports before the monkeypatch snapshot.

    The first ``TorchDispatchMode`` imports ``torch._dynamo``, which rebinds a few torch
    functions (``torch.manual_seed`` among them); that must happen before the snapshot, or the
    library's own rebinding would look like the candidate's monkeypatching.
    """
    from torch.utils._python_dispatch import TorchDispatchMode

    class _Noop(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            return func(*args, **(kwargs or {}))

    with _Noop():
        torch.zeros(1).add_(1)


def _init_device(backend: str) -> torch.device:
    if backend == "interpreter":
        return torch.device("cpu")
    if backend == "cuda":
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


def _device_name(backend: str) -> str:
    try:
        if backend == "cuda":
            return str(torch.cuda.get_device_name(0))
        if backend == "npu":
            return str(torch.npu.get_device_name(0))
    except Exception:  # noqa: BLE001
        return backend
    import platform

    return f"CPU ({platform.machine()}, Triton interpreter)"


def _copy_args(values: list[Any]) -> list[Any]:
    return [v.clone() if isinstance(v, torch.Tensor) else v for v in values]


def _error_for(exc: BaseException) -> ErrorType:
    return classify_exception(exc)


def _import_candidate(code: str, filename: str) -> types.ModuleType:
    module = types.ModuleType(CANDIDATE_MODULE)
    module.__file__ = filename
    sys.modules[CANDIDATE_MODULE] = module
    try:
        compiled = compile(code, filename, "exec")
        exec(compiled, module.__dict__)
    except BaseException as exc:  # noqa: BLE001 - candidate code
        kind = classify_exception(exc)
        if kind == ErrorType.RUNTIME_ERROR:
            kind = ErrorType.COMPILE_ERROR  # the module does not load
        raise StageError(kind, "importing your code failed: " + describe_exception(exc, filename)) from None
    return module


def _copy_parameters(reference: Any, candidate: Any) -> None:
    """Give the candidate the reference's parameters and buffers wherever names and shapes match."""
    if not isinstance(reference, torch.nn.Module) or not isinstance(candidate, torch.nn.Module):
        return
    source = reference.state_dict()
    target = torch.nn.Module.state_dict(candidate)
    # Copies, loaded through the base class: the candidate never holds the reference's own tensors.
    matching = {
        k: torch.Tensor.clone(torch.Tensor.detach(v))
        for k, v in source.items()
        if k in target and tuple(target[k].shape) == tuple(v.shape)
    }
    if matching:
        with torch.no_grad():
            torch.nn.Module.load_state_dict(candidate, matching, strict=False)
    # Buffers registered with persistent=False are not in the state dict; a random one drawn in
    # the reference's __init__ (a fixed projection, a mask) must reach the candidate as well.
    for name, value in _non_persistent_buffers(reference).items():
        target = cx.module_buffer(candidate, name)
        if target is not None and target.shape == value.shape and target.dtype == value.dtype:
            with torch.no_grad():
                torch.Tensor.copy_(target, value)


def _non_persistent_buffers(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The reference's buffers registered with ``persistent=False``, by qualified name."""
    found = {}
    for prefix, sub in module.named_modules():
        for name in getattr(sub, "_non_persistent_buffers_set", ()):
            value = sub._buffers.get(name)
            if isinstance(value, torch.Tensor):
                found[f"{prefix}.{name}" if prefix else name] = value
    return found


def _check_snapshot(snapshot: LibrarySnapshot) -> None:
    changed = snapshot.changed()
    if changed:
        raise StageError(
            ErrorType.SANDBOX_VIOLATION,
            "sandbox: your code replaced library functions (monkeypatching): " + ", ".join(changed[:6]),
        )


# --- correctness ----------------------------------------------------------------------------


@dataclass
class CandidateCall:
    """What one recorded call of the candidate left, frozen before any other code of it can run."""

    #: a private copy of the output (plain tuples / lists of cloned tensors)
    output: Any
    #: per output tensor or scalar (depth-first): shares storage with an input, a parameter or a buffer
    aliased: list[bool] = field(default_factory=list)
    #: the inputs as the call left them: copies of those it changed, the pristine inputs otherwise
    inputs_after: list[Any] | None = None
    #: indexes of the inputs the call changed
    changed: list[int] = field(default_factory=list)


def _call_candidate(
    state: _State, candidate: Any, inputs: list[Any], first: bool, pristine: list[Any] | None = None
) -> CandidateCall:
    """Call the candidate on ``inputs`` with the recorder on, check the call, freeze its result.

    From the moment ``forward`` returns until the output is copied (and, with ``pristine``, the
    copies of the inputs, the aliasing and input-change state taken), no code of the candidate
    runs: the garbage collector is off (no finalisers), the output's structure is copied inside
    the recorded call from exact tuples / lists only (``correctness.plain_output``), and the
    model's parameters and buffers are found without calling any of its methods.
    """
    recorder = state.recorder
    assert recorder is not None
    gc.enable()
    try:
        return _recorded_call(state, recorder, candidate, inputs, first, pristine)
    finally:
        gc.enable()


def _recorded_call(
    state: _State, recorder: Recorder, candidate: Any, inputs: list[Any], first: bool, pristine: list[Any] | None
) -> CandidateCall:
    bad_output: cx.OutputCheckError | None = None
    try:
        with (
            torch.no_grad(),
            state.redirect or contextlib.nullcontext(),
            recorder.recording_forward(inputs) as stats,
        ):
            out = candidate(*inputs)
            gc.disable()
            try:
                out = cx.plain_output(out)
            except cx.OutputCheckError as problem:
                out, bad_output = None, problem
        if state.job.backend in ("cuda", "npu"):
            getattr(torch, state.job.backend).synchronize()
    except StageError:
        raise
    except BaseException as exc:  # noqa: BLE001 - candidate code
        kind = classify_exception(exc)
        prefix = "the first call of ModelNew.forward failed: " if first else "ModelNew.forward failed: "
        raise StageError(kind, prefix + describe_exception(exc, state.candidate_file)) from None
    if state.snapshot is not None:
        _check_snapshot(state.snapshot)
    if stats.launches == 0:
        raise StageError(
            ErrorType.NO_KERNEL_LAUNCHED,
            "ModelNew.forward returned without launching any of your @triton.jit kernels "
            f"({', '.join(state.job.kernels) or 'none found'}); the work must be done by your Triton kernel, "
            "launched as kernel[grid](...) on every call",
        )
    bad_ops = sorted(op for op in stats.ops if not _allowed(op))
    if bad_ops:
        scalar_note = (
            " (reading tensor values into Python, .item() / float(t), counts as computing)"
            if any("_local_scalar_dense" in op for op in bad_ops)
            else ""
        )
        raise StageError(
            ErrorType.TORCH_FALLBACK,
            "PyTorch computed part of the result inside ModelNew.forward: "
            + ", ".join(f"{op} (x{stats.ops[op]})" for op in bad_ops[:12])
            + ". Only allocation, views and copies may run outside your Triton kernels"
            + scalar_note
            + ".",
        )
    # The type checks come after the hack checks: an odd output type never hides a fallback.
    try:
        if bad_output is not None:
            raise bad_output
        tensors = cx.check_output_tensors(out)
    except cx.OutputCheckError as problem:
        raise StageError(ErrorType(problem.kind), problem.message) from None
    out_ptrs = {cx.storage_ptr(t) for t in tensors if t.device.type != "meta" and cx.storage_nbytes(t)}
    for ptr in out_ptrs:
        if ptr in stats.tainted and stats.tainted[ptr] != "an input":  # returning an input: aliasing check
            raise StageError(
                ErrorType.TORCH_FALLBACK,
                f"the output holds data PyTorch moved without your kernel ({stats.tainted[ptr]}); the output must be "
                "written by your Triton kernel (casting or concatenating your kernels' results is fine)",
            )
    for tensor in tensors:
        if not torch.Tensor.is_contiguous(tensor) and copied_input_piece(tensor, stats.input_bytes):
            raise StageError(
                ErrorType.TORCH_FALLBACK,
                "the output is a rearranged view of memory holding an unchanged copy of an input: the kernel only "
                "copied the data and a view did the task's work; write the result with your Triton kernel",
            )
    for op, ptr, full in stats.writes:
        if ptr not in out_ptrs:
            continue
        if op in FILL_TORCH_OPS and not full:
            raise StageError(
                ErrorType.TORCH_FALLBACK,
                f"parts of the output were written by PyTorch (aten.{op} on a slice); write the result from your "
                "kernel (filling the whole output before a kernel accumulates into it is fine)",
            )
    return _freeze(out, inputs, candidate, pristine)


def _freeze(out: Any, inputs: list[Any], candidate: Any, pristine: list[Any] | None) -> CandidateCall:
    """Copy what the checks need from a call (the collector is still off)."""
    try:
        call = CandidateCall(cx.detach_copy(out))
    except Exception as exc:  # noqa: BLE001 - e.g. no memory for the copy of a huge output
        kind = classify_exception(exc)
        raise StageError(
            kind if kind == ErrorType.OOM else ErrorType.RUNTIME_ERROR,
            f"the output could not be copied for checking: {type(exc).__name__}: {str(exc)[:300]}",
        ) from None
    if pristine is None:
        return call
    shared = cx.storage_ptrs(inputs) | cx.storage_ptrs(candidate)
    call.aliased = [
        type(leaf) is torch.Tensor
        and leaf.device.type != "meta"
        and cx.storage_nbytes(leaf) > 0
        and cx.storage_ptr(leaf) in shared
        for _, leaf in cx.output_leaves(out)
    ]
    try:
        call.changed = cx.inputs_equal(inputs, pristine)
        call.inputs_after = [
            cx.clone_inputs([x])[0] if i in call.changed else p
            for i, (x, p) in enumerate(zip(inputs, pristine, strict=False))
        ]
    except Exception as exc:  # noqa: BLE001 - the candidate left an input in a state no copy or compare takes
        raise StageError(
            ErrorType.INPUT_MUTATED,
            f"ModelNew.forward left an input argument unreadable ({type(exc).__name__}: {str(exc)[:200]}); inputs "
            "must be left unchanged",
        ) from None
    return call


def _allowed(op: str) -> bool:
    from ascend_kernel_gym.evaluation.recorder import _is_allowed

    return _is_allowed(op)


class TaskProblemError(Exception):
    """The task itself cannot be evaluated (found before any candidate code runs)."""


def _check_reference(state: _State, task_module: Any, reference: Any, device: torch.device, seed: int) -> None:
    """Run the reference twice on one set of the task's own inputs, before any candidate code.

    A reference that raises here, returns what no candidate can return, or gives different
    outputs for the same inputs (dropout in training mode, an RNG it draws from) is the task's
    problem: reported as such instead of as the candidate's failure in every trial.
    """
    inputs = cx.make_inputs(task_module, seed, "task", device)
    with torch.no_grad(), state.redirect or contextlib.nullcontext():
        first = cx.detach_copy(reference(*cx.clone_inputs(inputs)))
        second = reference(*cx.clone_inputs(inputs))
    unsupported = _unsupported_output(first)
    if unsupported:
        raise TaskProblemError(
            f"the reference returns {unsupported}; outputs must be tensors, Python numbers, None, or tuples / "
            "lists of them"
        )
    if not cx.outputs_close(first, second, state.job.task.atol, state.job.task.rtol):
        raise TaskProblemError(
            "the reference model gives different outputs for the same inputs (random operations such as "
            "dropout in training mode, or an RNG it draws from), so no kernel can match it"
        )


def _unsupported_output(value: Any, depth: int = 0) -> str:
    if isinstance(value, torch.Tensor) or value is None or type(value) in (int, float, bool):
        return ""
    if isinstance(value, (tuple, list)) and depth < cx.MAX_OUTPUT_DEPTH:
        return next((found for v in value if (found := _unsupported_output(v, depth + 1))), "")
    return f"a value of type {type(value).__name__}"


def _run_reference(state: _State, reference: Any, inputs: list[Any]) -> Any:
    """Run the reference, and keep candidate code from running until the candidate's next call.

    Pending finalisers of candidate objects run first (``gc.collect``), the library snapshot is
    checked, and the garbage collector stays off until the next candidate call, so a patch that
    a candidate object installs or removes from a finaliser cannot act on the reference or the
    checks.
    """
    backend = state.job.backend
    gc.collect()
    if state.snapshot is not None:
        _check_snapshot(state.snapshot)
    gc.disable()
    try:
        with torch.no_grad(), state.redirect or contextlib.nullcontext():
            out = reference(*inputs)
        if backend in ("cuda", "npu"):
            getattr(torch, backend).synchronize()
    except BaseException as exc:  # noqa: BLE001
        kind = classify_exception(exc)
        if kind != ErrorType.OOM:
            kind = ErrorType.RUNTIME_ERROR
        raise StageError(
            kind, f"the reference model failed after your code had run: {type(exc).__name__}: {str(exc)[:300]}"
        ) from None
    return out


def _device_usable(backend: str) -> bool:
    """Whether the device still runs work (a device-side assert leaves a context that cannot)."""
    if backend not in ("cuda", "npu"):
        return True
    try:
        probe = torch.ones(2, device=backend)
        getattr(torch, backend).synchronize()
        return float(probe.sum().item()) == 2.0
    except Exception:  # noqa: BLE001 - any failure means the context is gone
        return False


def _run_correctness(
    state: _State, task_module: Any, reference: Any, candidate: Any, device: torch.device, rng: random.Random
) -> None:
    job, result = state.job, state.result
    atol, rtol = job.task.atol, job.task.rtol
    result.trials_total = job.num_trials
    if job.task_inputs_only:
        result.warnings.append(
            "every correctness trial used the task's own input distribution: the task's reference fails on the "
            "device for other values (a device-side check such as binary_cross_entropy's input range)"
        )
    first_call = True
    previous: tuple[Any, Any] | None = None  # (candidate output, reference output) of an earlier trial
    fallback_next = False
    attempts = 0
    trial = 0
    max_abs = max_rel = 0.0
    while trial < job.num_trials:
        attempts += 1
        if attempts > job.num_trials * 3:
            raise StageError(
                ErrorType.HARNESS_ERROR,
                "the task's reference fails (raises, or returns non-finite values) on the task's own inputs",
            )
        distribution = "task" if fallback_next or job.task_inputs_only else cx.trial_distribution(trial, rng)
        fallback_next = False
        seed = rng.getrandbits(62)
        base = cx.make_inputs(task_module, seed, distribution, device)
        cand_inputs = cx.clone_inputs(base)
        first_started = time.perf_counter()
        call = _call_candidate(state, candidate, cand_inputs, first_call, base)
        snap_c = call.output
        if first_call:
            result.stage_durations["compile.first_call"] = round(time.perf_counter() - first_started, 4)
            first_call = False
            # What compiling left behind is permanent from here: the collection before every
            # reference call (which runs candidate finalisers) then scans only newer objects.
            gc.collect()
            gc.freeze()
            result.compiled = True
            state.stage(Stage.CORRECTNESS)
        if trial == 0:
            # Same inputs again: the output must not change.
            snap_again = _call_candidate(state, candidate, cx.clone_inputs(base), False).output
        ref_inputs = cx.clone_inputs(base)
        try:
            out_r = _run_reference(state, reference, ref_inputs)
        except StageError as failure:
            if distribution == "task" or failure.error_type != ErrorType.RUNTIME_ERROR:
                raise
            if not _device_usable(job.backend):
                raise StageError(
                    ErrorType.HARNESS_ERROR, f"{REFERENCE_BROKE_DEVICE} ({distribution}): {failure.message}"
                ) from None
            fallback_next = True  # the reference refuses these values (a domain check): the task's own
            continue
        if distribution != "task" and not cx.all_finite(out_r):
            fallback_next = True  # this distribution breaks the reference: redo with the task's own
            continue
        pairs, changed = _checked_pairs(snap_c, out_r, call, ref_inputs)
        slack = _precision_slack(state, reference, base, out_r) or [None] * len(pairs)
        if changed and all(
            cx.compare(cand_t, ref_t, atol, rtol, ref_slack).ok
            for (cand_t, ref_t, _), ref_slack in zip(pairs, slack, strict=False)
        ):
            raise StageError(
                ErrorType.INPUT_MUTATED,
                f"ModelNew.forward modified its input argument(s) {changed} in place (its output is otherwise "
                "correct); inputs must be left unchanged",
            )
        # An input changed and the output is wrong too: most likely an honest mistake (an
        # argument order that makes the kernel write into an input), so the output's own failure
        # is reported, with a note. Nothing is gained by it: a wrong output fails anyway.
        note = _mutation_note(changed)
        try:
            if trial == 0 and not cx.outputs_close(snap_again, snap_c, atol, rtol):
                raise StageError(
                    ErrorType.NONDETERMINISTIC,
                    "ModelNew.forward gave different outputs for the same inputs on two calls "
                    "(race condition, uninitialised memory, or state kept between calls)",
                )
            if (
                previous is not None
                and cx.outputs_identical(snap_c, previous[0])
                and not cx.outputs_close(out_r, previous[1], atol, rtol)
            ):
                raise _input_independent()
            for (cand_t, ref_t, label), ref_slack in zip(pairs, slack, strict=False):
                cmp = cx.compare(cand_t, ref_t, atol, rtol, ref_slack)
                if cmp.ok:
                    max_abs = max(max_abs, cmp.max_abs_err)
                    max_rel = max(max_rel, cmp.max_rel_err)
                    continue
                if cmp.nonfinite:
                    raise StageError(
                        ErrorType.NAN_OR_INF,
                        f"{label} contains NaN or Inf where the reference is finite (first at index "
                        f"{tuple(cmp.first_bad_index)}: got {cmp.cand_value}, expected {cmp.ref_value}); "
                        f"{cmp.bad_count} of {cand_t.numel()} elements are wrong (trial {trial + 1})",
                        max_abs_err=cmp.max_abs_err,
                        max_rel_err=cmp.max_rel_err,
                        trials_passed=trial,
                    )
                if previous is None and _probe_input_independent(
                    state, task_module, reference, candidate, device, rng, snap_c, out_r
                ):
                    raise _input_independent()
                raise StageError(
                    ErrorType.VALUE_MISMATCH,
                    f"{label} does not match the reference (trial {trial + 1} of {job.num_trials}): "
                    f"max abs error {cmp.max_abs_err:.3g}, max rel error {cmp.max_rel_err:.3g}, "
                    f"{cmp.bad_count} of {cand_t.numel()} elements {_tolerance_text(ref_t, atol, rtol, ref_slack)}; "
                    f"first bad index {tuple(cmp.first_bad_index)}: got {cmp.cand_value:.6g}, "
                    f"expected {cmp.ref_value:.6g}",
                    max_abs_err=cmp.max_abs_err,
                    max_rel_err=cmp.max_rel_err,
                    trials_passed=trial,
                )
        except StageError as failure:
            raise _with_note(failure, note) from None
        previous = (snap_c, cx.detach_copy(out_r))
        trial += 1
        result.trials_passed = trial
    result.max_abs_err = max_abs
    result.max_rel_err = max_rel
    result.correct = True


def _tolerance_text(ref: torch.Tensor, atol: float, rtol: float, slack: Any) -> str:
    if not (torch.Tensor.is_floating_point(ref) or torch.Tensor.is_complex(ref)):
        return "differ (integer and boolean outputs must match exactly)"
    rounding = " + the reference rounding error" if slack is not None else ""
    return f"outside atol={atol:g} + rtol={rtol:g}*|expected|{rounding}"


def _mutation_note(changed: list[int]) -> str:
    if not changed:
        return ""
    return (
        f"\nNote: ModelNew.forward also modified its input argument(s) {changed} in place. Check the argument "
        "order of your kernel launch: the kernel may be storing into an input instead of the output."
    )


def _with_note(failure: StageError, note: str) -> StageError:
    if not note:
        return failure
    return StageError(failure.error_type, failure.message + note, **failure.metrics)


def _precision_slack(state: _State, reference: Any, inputs: list[Any], out_r: Any) -> list[Any] | None:
    """The float16 / bfloat16 reference's own rounding error, from the same model run in float32.

    Runs right after the reference (the library snapshot was just checked, the collector is
    off); anything going wrong here only means no slack, never a failed candidate.
    """
    if state.reference_hi is False or not cx.has_low_precision(out_r):
        return None
    backend = state.job.backend
    try:
        if state.reference_hi is None:
            state.reference_hi = (
                torch.nn.Module.float(copy.deepcopy(reference)) if isinstance(reference, torch.nn.Module) else False
            )
            if state.reference_hi is False:
                return None
        with torch.no_grad(), state.redirect or contextlib.nullcontext():
            out_hi = state.reference_hi(*cx.upcast(cx.clone_inputs(inputs)))
        if backend in ("cuda", "npu"):
            getattr(torch, backend).synchronize()
        return cx.precision_slack(out_r, out_hi)
    except Exception:  # noqa: BLE001 - a reference that cannot run in float32 gets no slack
        state.reference_hi = False
        return None


def _input_independent() -> StageError:
    return StageError(
        ErrorType.INPUT_INDEPENDENT,
        "ModelNew.forward returned the same output for different inputs while the reference's output changed "
        "(a constant, or a result cached across calls); compute the output from the inputs every call",
    )


def _probe_input_independent(
    state: _State,
    task_module: Any,
    reference: Any,
    candidate: Any,
    device: torch.device,
    rng: random.Random,
    snap_c: Any,
    out_r: Any,
) -> bool:
    """After a first-trial mismatch: does the candidate ignore its inputs?"""
    base = cx.make_inputs(task_module, rng.getrandbits(62), "task", device)
    other_c = _call_candidate(state, candidate, cx.clone_inputs(base), False).output
    other_r = _run_reference(state, reference, cx.clone_inputs(base))
    return cx.outputs_identical(other_c, snap_c) and not cx.outputs_close(
        other_r, out_r, state.job.task.atol, state.job.task.rtol
    )


def _checked_pairs(
    snap_c: Any, out_r: Any, call: CandidateCall, ref_inputs: list[Any]
) -> tuple[list[tuple[torch.Tensor, torch.Tensor, str]], list[int]]:
    """Pair the candidate's output (copy) with the reference's and check everything but values.

    Returns the pairs and the indexes of the inputs the candidate changed (compared with the
    reference's inputs after its own run); the caller decides whether that is ``input_mutated``.
    """
    try:
        pairs = cx.flatten_outputs(snap_c, out_r)
    except cx.OutputCheckError as problem:
        raise StageError(ErrorType(problem.kind), problem.message) from None
    for (_, _, label), shared in zip(pairs, call.aliased, strict=False):
        if shared:
            raise StageError(
                ErrorType.OUTPUT_ALIASES_INPUT,
                f"{label} shares memory with an input or a parameter of the model; return a new tensor "
                "written by your kernel",
            )
    # Changed by the candidate, and not the way the reference changes it (a reference may work in
    # place, ``nn.ReLU(inplace=True)``: the candidate may then do the same or leave the input alone).
    changed = [i for i in cx.inputs_equal(call.inputs_after or [], ref_inputs) if i in call.changed]
    note = _mutation_note(changed)
    for cand_t, ref_t, label in pairs:
        if cand_t.device.type != ref_t.device.type:
            raise StageError(
                ErrorType.DEVICE_MISMATCH,
                f"{label} is on {cand_t.device.type}, the reference output is on {ref_t.device.type}" + note,
            )
        if tuple(cand_t.shape) != tuple(ref_t.shape):
            raise StageError(
                ErrorType.SHAPE_MISMATCH,
                f"{label} has shape {tuple(cand_t.shape)}, expected {tuple(ref_t.shape)}" + note,
            )
        if cand_t.dtype != ref_t.dtype:
            raise StageError(
                ErrorType.DTYPE_MISMATCH,
                f"{label} has dtype {str(cand_t.dtype).replace('torch.', '')}, expected "
                f"{str(ref_t.dtype).replace('torch.', '')}" + note,
            )
    return pairs, changed


# --- Ascend hooks -------------------------------------------------------------------------------


def _run_ascend_hooks(
    state: _State, task_module: Any, reference: Any, candidate: Any, device: torch.device, rng: random.Random
) -> None:
    job, result = state.job, state.result
    if job.ascend_checks == "off":
        return
    try:
        from ascend_kernel_gym.ascend import checks as ascend_checks
    except ImportError:
        ascend_checks = None  # type: ignore[assignment]
    if ascend_checks is not None and hasattr(ascend_checks, "run_ascend_checks"):
        try:
            findings = ascend_checks.run_ascend_checks(
                job.code, list(state.recorder.launches) if state.recorder else [], job.ascend_profile
            )  # type: ignore[union-attr]
            result.ascend_checks = json.loads(json.dumps([dict(f) for f in findings], default=str))
        except Exception as exc:  # noqa: BLE001 - a bug in the checks must not fail the candidate
            result.warnings.append(f"Ascend checks could not run: {type(exc).__name__}: {str(exc)[:200]}")
        for finding in result.ascend_checks:
            result.warnings.append(f"ascend[{finding.get('rule')}] {finding.get('message')}")
        errors = [f for f in result.ascend_checks if f.get("severity") == "error"]
        if job.ascend_checks == "enforce" and errors:
            raise StageError(
                ErrorType.ASCEND_CONSTRAINT,
                "the kernel breaks Ascend constraints: " + "; ".join(str(f.get("message")) for f in errors[:5]),
            )
    if job.backend != "interpreter":
        return
    try:
        from ascend_kernel_gym.ascend import cost_model
    except ImportError:
        return
    if not (hasattr(cost_model, "instrument") and hasattr(cost_model, "estimate")):
        return
    try:
        inputs = cx.make_inputs(task_module, rng.getrandbits(62), "task", device)
        # The counted call is a checked one (recorded, its output compared with the reference's):
        # a candidate cannot do less work on it than on the others.
        with cost_model.instrument() as counters:
            counted = _call_candidate(state, candidate, cx.clone_inputs(inputs), False).output
        out_r = _run_reference(state, reference, cx.clone_inputs(inputs))
        slack = _precision_slack(state, reference, inputs, out_r)
        if not cx.outputs_close(counted, out_r, job.task.atol, job.task.rtol, slack):
            raise StageError(
                ErrorType.VALUE_MISMATCH,
                "the output was wrong on the call the cost model counted (work skipped on some calls); compute the "
                "output from the inputs on every call",
            )
        roofline: dict[str, Any] | None
        if hasattr(cost_model, "task_roofline"):
            roofline = cost_model.task_roofline(reference, cx.clone_inputs(inputs), job.task.id)
        else:
            from ascend_kernel_gym.evaluation.profiling import min_bytes

            roofline = {"min_bytes": min_bytes(inputs, [])}
        estimate = cost_model.estimate(counters, roofline, job.ascend_profile)
        result.estimate = json.loads(json.dumps(estimate, default=str))
    except StageError:
        raise
    except Exception as exc:  # noqa: BLE001 - a bug in the cost model must not fail the candidate
        result.warnings.append(f"cost model could not run: {type(exc).__name__}: {str(exc)[:200]}")


# --- profiling ----------------------------------------------------------------------------------


#: share of the device's free memory the timing stage's arenas, kept outputs and spacers of both
#: models may take
TIMING_MEMORY_SHARE = 0.25


def _run_profiling(
    state: _State, task_module: Any, reference: Any, candidate: Any, device: torch.device, rng: random.Random
) -> None:
    from ascend_kernel_gym.evaluation import profiling

    job, result = state.job, state.result
    atol, rtol = job.task.atol, job.task.rtol
    started = time.perf_counter()
    # Wall seconds inside the rounds, outside the timed calls: drawing inputs, and the checks
    # (of which: reference re-runs, recorded audit calls, output comparisons).
    spent = dict.fromkeys(("inputs", "checks", "reference_reruns", "audit_calls", "compare"), 0.0)

    @contextlib.contextmanager
    def spending(part: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            spent[part] += time.perf_counter() - t0

    def make_inputs(seed: int) -> list[Any]:
        with spending("inputs"):
            return cx.make_inputs(task_module, seed, "task", device)

    def timed_part(part: Callable[[int], None]) -> Callable[[int], None]:
        def run(k: int) -> None:
            with spending("checks"):
                part(k)

        return run

    source = placement.RoundInputs(make_inputs, rng.getrandbits(62))
    first = source[0]
    first_out = cx.detach_copy(_run_reference(state, reference, cx.clone_inputs(first)))
    ring, slack = placement.timing_memory([first], first_out, device, TIMING_MEMORY_SHARE)
    arenas = {
        name: placement.InputArena(model, source, rng, slack=slack, output_ring=ring)
        for name, model in (("candidate", candidate), ("reference", reference))
    }
    expected: dict[int, tuple[Any, Any]] = {}

    def reference_output(k: int) -> tuple[Any, Any]:
        """The reference's output on round ``k``'s inputs and its precision slack (untimed)."""
        if k not in expected:
            expected.clear()
            inputs = source[k]
            with spending("reference_reruns"):
                out = cx.detach_copy(_run_reference(state, reference, cx.clone_inputs(inputs)))
                expected[k] = (out, _precision_slack(state, reference, inputs, out))
        return expected[k]

    def check_output(out: Any, k: int) -> None:
        ref_out, ref_slack = reference_output(k)
        with spending("compare"):
            close = cx.outputs_close(out, ref_out, atol, rtol, ref_slack)
        if not close:
            raise StageError(
                ErrorType.VALUE_MISMATCH,
                "the output changed during timing (a result cached across calls, or work skipped once timing "
                "started); compute the output from the inputs on every call",
            )

    def audit(k: int) -> None:
        with spending("audit_calls"):
            call = _call_candidate(state, candidate, arenas["candidate"].load(k), False)
        check_output(call.output, k)

    def after_candidate(k: int) -> None:
        if state.snapshot is not None:
            _check_snapshot(state.snapshot)

    def check(k: int) -> None:
        try:
            out = cx.plain_output(arenas["candidate"].last_output)  # no code of the candidate runs
        except cx.OutputCheckError as problem:
            raise StageError(ErrorType.WRONG_OUTPUT_TYPE, f"during timing: {problem}") from None
        check_output(out, k)

    # Only kernels that spill use the context's local memory enough for its place to matter;
    # moving it costs a reallocation of up to a few hundred MB each time.
    spills = state.recorder.max_spills if state.recorder is not None else 0
    local_memory = placement.LocalMemory.for_device(device, rng) if spills > 0 else None
    set_up = time.perf_counter()
    try:
        side_streams = _watch_side_streams(state, device)
        quiet_wait_s = state.link.wait_quiet() if state.link is not None else None
        with torch.no_grad():
            timing = profiling.time_side_by_side(
                arenas["candidate"].prepare,
                arenas["reference"].prepare,
                timed_part(audit),
                device_type=device.type,
                num_sets=job.profile_reps,  # a fresh input set in every round
                reps=job.profile_reps,
                warmup=job.profile_warmup,
                rng=rng,
                flush_bytes=profiling.FLUSH_BYTES if device.type != "cpu" else 1 << 20,
                after_candidate=timed_part(after_candidate),
                check=timed_part(check),
                side_stream_launches=side_streams,
                relocate=local_memory.move if local_memory is not None else None,
            )
    except StageError:
        raise
    except BaseException as exc:  # noqa: BLE001
        raise StageError(
            classify_exception(exc), "timing failed: " + describe_exception(exc, state.candidate_file)
        ) from None
    finally:
        if local_memory is not None:
            local_memory.restore()
    result.ref_ms = round(timing.ref_ms, 6)
    result.kernel_ms = round(timing.kernel_ms, 6)
    result.speedup = round(timing.speedup, 4)
    result.timing = timing.details
    result.timing["arena_slack_bytes"] = slack
    result.timing["outputs_kept"] = ring
    result.timing["local_memory_moves"] = local_memory.moves if local_memory is not None else 0
    result.timing["max_spills"] = spills
    result.timing["phase_s"] = {
        "setup": round(set_up - started, 4),
        **result.timing.get("phase_s", {}),
        **{name: round(seconds, 4) for name, seconds in spent.items()},
    }
    if quiet_wait_s is not None:
        result.timing["quiet_wait_s"] = quiet_wait_s
    result.warnings.extend(profiling.plausibility_warnings(timing, first, first_out, _bandwidth_gbps(job)))


def _watch_side_streams(state: _State, device: torch.device) -> Callable[[], int] | None:
    """Count Triton launches on a stream other than the one timing events are recorded on."""
    module = getattr(torch, device.type, None) if device.type != "cpu" else None
    current = getattr(module, "current_stream", None)
    if state.recorder is None or current is None:
        return None
    timing_stream = current()
    handle = getattr(timing_stream, "cuda_stream", None) or getattr(timing_stream, "npu_stream", None)
    seen = [0]

    def probe() -> None:
        if current() != timing_stream:
            seen[0] += 1

    def probe_handle(stream: Any) -> None:
        if handle is not None and isinstance(stream, int) and stream != handle:
            seen[0] += 1

    state.recorder.stream_probe = probe
    state.recorder.stream_handle_probe = probe_handle
    return lambda: seen[0]


def _bandwidth_gbps(job: Job) -> float | None:
    try:
        from ascend_kernel_gym.ascend.chips import load_chip
    except ImportError:
        return None
    try:
        if job.backend == "npu":
            return float(load_chip(job.ascend_profile).hbm_bandwidth_gbps)
        if job.backend != "cuda":
            return None
        name = torch.cuda.get_device_name(0)
        for chip in ("H200",):
            if chip in name:
                return float(load_chip(chip).hbm_bandwidth_gbps)
    except Exception:  # noqa: BLE001
        return None
    return None
