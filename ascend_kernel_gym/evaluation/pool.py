"""Calling-process side of the warm pool: one :class:`ZygoteHandle` per worker.

A handle starts its zygote with ``subprocess.Popen`` (a fresh interpreter with a scrubbed
environment, so nothing of the calling process leaks in), waits for it to finish warming up,
and sends it jobs one at a time. A zygote that dies or stops answering is killed and started
again on the next job; the job in flight gets a ``harness_error`` result.

:func:`result_from_reply` reads a worker's reply into a result (what the child sent, or why it died).

A zygote started with the OS sandbox reports which layers this machine has; layers it lacks
are reported once per process (a :class:`RuntimeWarning`), and the evaluation goes on with the
others.

Imports neither torch nor triton.
"""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path
from typing import Any

from ascend_kernel_gym.evaluation import cuda_sync
from ascend_kernel_gym.evaluation.concurrency import OWN_MEMORY_CAP_MESSAGE
from ascend_kernel_gym.evaluation.result import ErrorType, EvalResult, Stage
from ascend_kernel_gym.evaluation.wire import HEADER, JUDGE_MODES, LEASE_EXTRA_MAX_S, read_exact, write_message
from ascend_kernel_gym.evaluation.zygote_main import BOOTSTRAP

_ENV_KEEP = ("PATH", "LANG", "LC_ALL", "LD_LIBRARY_PATH", "TMPDIR", "PYTHONHASHSEED", "SYSTEMROOT")
_ENV_PREFIXES = ("CUDA", "NVIDIA", "ASCEND", "NPU_", "HCCL", "TRITON_PTXAS", "TRITON_LIBCUDA")
START_TIMEOUT_S = 600.0
#: hardware work queues per CUDA context (CUDA's own variable; the caller's setting wins)
CUDA_CONNECTIONS_ENV = "CUDA_DEVICE_MAX_CONNECTIONS"
DEFAULT_CUDA_CONNECTIONS = "1"
#: beyond the job's own limit: the zygote's start-up, and the device lease's waits and pauses
#: (at most 3 x LEASE_EXTRA_MAX_S, evaluation/device_lease.py)
REPLY_GRACE_S = 60.0 + 3 * LEASE_EXTRA_MAX_S
#: (backend, layers off) already reported in this process
_REPORTED_LAYERS: set[tuple[str, str]] = set()
_REPORTED_LOCK = threading.Lock()


def missing_sandbox_layers(info: dict[str, Any]) -> dict[str, str]:
    """The OS sandbox layers a zygote's probe found off on this machine (``{}``: all on, or no sandbox).

    Layers the policy leaves off on purpose (the PID namespace on devices) are not listed.
    """
    report = info.get("os_sandbox")
    if not isinstance(report, dict):
        return {}
    from ascend_kernel_gym.evaluation.os_sandbox import SandboxReport

    return SandboxReport.from_dict(report).missing()


def report_missing_layers(backend: str, missing: dict[str, str]) -> None:
    """Warn once per process and backend when the OS sandbox runs with layers off (``missing``)."""
    if not missing:
        return
    text = "; ".join(f"{name} ({reason.removeprefix('off: ')})" for name, reason in missing.items())
    with _REPORTED_LOCK:
        if (backend, text) in _REPORTED_LAYERS:
            return
        _REPORTED_LAYERS.add((backend, text))
    warnings.warn(
        f"the evaluator's OS sandbox ({backend}) runs without these layers on this machine: {text}. "
        "The others stay on; `akg doctor` lists them.",
        RuntimeWarning,
        stacklevel=2,
    )


def judge_mode_from_env() -> str:
    """``AKG_JUDGE`` (empty: the backend's default); raises ``ValueError`` for an unknown mode."""
    mode = os.environ.get("AKG_JUDGE", "")
    if mode and mode not in JUDGE_MODES:
        raise ValueError(f"AKG_JUDGE must be one of {', '.join(JUDGE_MODES)} (or unset), got {mode!r}")
    return mode


class ZygoteError(RuntimeError):
    """The zygote died, hung or answered garbage."""


def zygote_env(backend: str, device_index: int | None, threads: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in _ENV_KEEP or k.startswith(_ENV_PREFIXES)}
    env["PYTHONNOUSERSITE"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if os.environ.get("AKG_EVAL_DEBUG"):
        env["AKG_EVAL_DEBUG"] = "1"
    threads_text = str(max(1, threads))
    env.setdefault("OMP_NUM_THREADS", threads_text)
    env.setdefault("MKL_NUM_THREADS", threads_text)
    env.setdefault("OPENBLAS_NUM_THREADS", threads_text)
    if backend == "interpreter":
        env["TRITON_INTERPRET"] = "1"
        env["CUDA_VISIBLE_DEVICES"] = ""
    else:
        env.pop("TRITON_INTERPRET", None)
        # torch.cuda.is_available() through NVML: no cuInit in the zygote (children fork from it).
        env["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
        if backend == "cuda":
            # One hardware queue per child context: a context starts in about half the time, and
            # eight workers start one per evaluation (device set-up at eight workers on an H100:
            # median 1.2 s instead of 3.6 s, 2026-12-05). Timed calls run on one stream anyway.
            env.setdefault(CUDA_CONNECTIONS_ENV, DEFAULT_CUDA_CONNECTIONS)
        if device_index is not None:
            key = "CUDA_VISIBLE_DEVICES" if backend == "cuda" else "ASCEND_RT_VISIBLE_DEVICES"
            visible = os.environ.get(key)
            if visible:
                ids = [v for v in visible.split(",") if v.strip()]
                env[key] = ids[device_index % len(ids)]
            else:
                env[key] = str(device_index)
    return env


class ZygoteHandle:
    """One worker: a zygote process and the lock that serialises its jobs.

    Args:
        backend: ``interpreter``, ``cuda`` or ``npu``.
        device_index: which device this worker uses (devices only).
        threads: torch / BLAS threads per child.
        tmp_root: where the zygote makes its temporary directories (default: the system's).
        prefork: the zygote keeps a spare child, set up ahead of the next job.
        os_sandbox: every child enters the OS sandbox (:mod:`.os_sandbox`) before its device and job.
    """

    def __init__(
        self,
        backend: str,
        device_index: int | None = None,
        threads: int = 1,
        tmp_root: str | None = None,
        prefork: bool = True,
        os_sandbox: bool = True,
    ):
        self.backend = backend
        self.prefork = prefork
        self.os_sandbox = os_sandbox
        self.device_index = device_index
        self.threads = threads
        self.tmp_root = tmp_root
        self.proc: subprocess.Popen[bytes] | None = None
        self.lock = threading.Lock()
        self.starts = 0
        self.info: dict[str, Any] = {}
        #: OS sandbox layers this machine lacks (name -> why), as the zygote's probe found
        self.missing_layers: dict[str, str] = {}
        self._ready = False

    # --- life cycle -----------------------------------------------------------------------------
    def start(self) -> None:
        """Start the zygote and wait until it is warm. Raises ZygoteError on failure."""
        from ascend_kernel_gym import __version__

        root = str(Path(__file__).resolve().parents[2])
        debug = bool(os.environ.get("AKG_EVAL_DEBUG"))
        self.proc = subprocess.Popen(
            [sys.executable, "-c", BOOTSTRAP, root, __version__],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=None if debug else subprocess.DEVNULL,
            env=zygote_env(self.backend, self.device_index, self.threads),
            close_fds=True,
            start_new_session=True,  # Ctrl-C in a terminal does not hit the pool
        )
        self.starts += 1
        self._ready = False
        write_message(
            self.proc.stdin.fileno(),
            {  # type: ignore[union-attr]
                "backend": self.backend,
                "torch_threads": self.threads,
                "tmp_root": self.tmp_root,
                "prefork": self.prefork,
                "os_sandbox": self.os_sandbox,
                # Where correctness is judged: "zygote", "reference" or "child" (default: the
                # zygote on the interpreter, the reference child on cuda, the candidate's child
                # on npu). A knob for tests and debugging.
                "judge": judge_mode_from_env(),
                # Several zygotes per device: "1"/"0" forces the device lease on / off (default: on
                # for devices), and where its lock files live (evaluation/device_lease.py).
                "device_lease": os.environ.get("AKG_DEVICE_LEASE", ""),
                "lease_dir": os.environ.get("AKG_LEASE_DIR") or None,
                # "1" / "0": the timing stage's device gate (evaluation/device_gate.py) on / off
                "timing_gate": os.environ.get("AKG_TIMING_GATE", ""),
                # "blocking" / "spin": how a CUDA child waits for the device outside its timed
                # rounds (evaluation/cuda_sync.py; default: blocking)
                "cuda_sync": cuda_sync.setting_from_env(),
                # "1" / "0": on cuda, a child without the device compiles each job's Triton kernels
                # ahead, going on while neighbours time (evaluation/precompile.py; default: on
                # where workers share a device)
                "precompile": os.environ.get("AKG_PRECOMPILE", ""),
                # "1" / "0": a job's reference child runs the reference only once its candidate's
                # first call went through (evaluation/zygote.py; default: where workers share a device)
                "defer_reference": os.environ.get("AKG_DEFER_REFERENCE", ""),
                # "1" / "0": where the reference child judges, a varied trial's moved reference runs
                # are made only for an output that needs their slack (evaluation/judge.py; default: on)
                "lazy_sensitivity": os.environ.get("AKG_LAZY_SENSITIVITY", ""),
            },
        )
        reply = self._read(time.monotonic() + START_TIMEOUT_S)
        if not isinstance(reply, dict) or not reply.get("ready"):
            self.kill()
            raise ZygoteError(f"the evaluator worker did not start (reply {reply!r})")
        self.info = reply
        self.missing_layers = missing_sandbox_layers(reply)
        self._ready = True
        report_missing_layers(self.backend, self.missing_layers)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None and self._ready

    def kill(self) -> None:
        proc, self.proc = self.proc, None
        self._ready = False
        if proc is None:
            return
        try:
            proc.kill()
        except OSError:
            pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        # Its children died with it (PR_SET_PDEATHSIG) without cleaning up: their sandboxes go too.
        root = self.info.get("root")
        if isinstance(root, str) and Path(root).name.startswith("akg-pool-") and proc.poll() is not None:
            shutil.rmtree(root, ignore_errors=True)
        for stream in (proc.stdin, proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass

    def close(self) -> None:
        proc = self.proc
        if proc is not None and proc.poll() is None:
            try:
                write_message(proc.stdin.fileno(), None)  # type: ignore[union-attr]
                proc.stdin.close()  # type: ignore[union-attr]
                proc.wait(timeout=5)
            except (OSError, ValueError, subprocess.TimeoutExpired):
                pass
        self.kill()

    # --- jobs ---------------------------------------------------------------------------------
    def run(self, job: Any, timeout: float, memory_mb: int) -> dict[str, Any]:
        """Run one job; raises ZygoteError if the zygote fails (it is then killed)."""
        if not self.alive():
            self.kill()
            self.start()
        assert self.proc is not None and self.proc.stdin is not None
        try:
            write_message(self.proc.stdin.fileno(), {"job": job, "timeout": timeout, "memory_mb": memory_mb})
        except (OSError, ValueError) as exc:
            self.kill()
            raise ZygoteError(f"the evaluator worker stopped accepting jobs ({exc})") from None
        reply = self._read(time.monotonic() + timeout + REPLY_GRACE_S)
        if not isinstance(reply, dict) or "status" not in reply:
            self.kill()
            raise ZygoteError("the evaluator worker died or stopped answering")
        return reply

    def _read(self, deadline: float) -> Any:
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        header = read_exact(fd, HEADER.size, deadline)
        if header is None:
            return None
        (size,) = HEADER.unpack(header)
        payload = read_exact(fd, size, deadline)
        if payload is None:
            return None
        try:
            return pickle.loads(payload)  # noqa: S301 - the zygote is harness code
        except Exception:  # noqa: BLE001
            return None


_SIGNAL_NAMES = {4: "SIGILL", 6: "SIGABRT", 7: "SIGBUS", 8: "SIGFPE", 9: "SIGKILL", 11: "SIGSEGV", 15: "SIGTERM"}


def result_from_reply(
    reply: dict[str, Any], output_cap: int, timeout: float, memory_mb: int, base: EvalResult
) -> EvalResult:
    """The result of a worker's reply: the child's own result, or ``base`` with why the child died.

    Args:
        reply: what :meth:`ZygoteHandle.run` returned.
        output_cap: characters of the child's output kept.
        timeout: the child's time limit (for the message).
        memory_mb: the child's host-memory cap (for the message).
        base: the result so far (task, backend, profile, static stage); changed in place when the child died.
    """
    from ascend_kernel_gym.evaluation.feedback import scrub_text

    data = reply.get("result")
    if isinstance(data, dict):
        try:
            result = EvalResult.from_dict(data)
        except (ValueError, TypeError, KeyError) as exc:
            base.error_type = ErrorType.HARNESS_ERROR
            base.error_message = f"the evaluation child sent an unreadable result ({exc})"
            return base
        result.stage_durations = {**result.stage_durations, **base.stage_durations}  # the static check's
        result.stage_durations["child_wall"] = reply.get("wall_s", 0.0)
        return result
    # The child died without reporting.
    result = base
    result.stage = Stage.COMPILE
    status = reply.get("status")
    reason = reply.get("reason", "")
    tail = scrub_text(reply.get("output_tail", ""), reply.get("sandbox"))
    result.output_tail = tail[-output_cap:]
    if reason == "timeout":
        result.error_type = ErrorType.TIMEOUT
        result.error_message = f"the evaluation did not finish within {timeout:g} s (infinite loop or far too slow)"
    elif reason == "not_started":
        result.error_type = ErrorType.HARNESS_ERROR
        result.error_message = "the evaluation child died before it started the evaluation (twice)"
    elif reason == "memory":
        result.error_type = ErrorType.OOM
        result.error_message = f"{OWN_MEMORY_CAP_MESSAGE} {memory_mb} MB of memory and was stopped"
    elif status is not None and os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        name = _SIGNAL_NAMES.get(sig, f"signal {sig}")
        if sig == 9:
            result.error_type = ErrorType.OOM
            result.error_message = "the process was killed (SIGKILL), most likely by the system's out-of-memory killer"
        elif sig == 6 and "bad_alloc" in tail:
            result.error_type = ErrorType.OOM
            result.error_message = "the process ran out of memory (std::bad_alloc)"
        else:
            result.error_type = ErrorType.CRASH
            result.error_message = f"the process crashed with {name}" + (
                " (invalid memory access: an out-of-bounds pointer or a missing mask?)" if sig in (7, 11) else ""
            )
    elif status is not None and os.WIFEXITED(status):
        result.error_type = ErrorType.CRASH
        result.error_message = (
            f"the process exited with status {os.WEXITSTATUS(status)} before the evaluation finished; "
            "kernels must not exit the process"
        )
    else:
        result.error_type = ErrorType.HARNESS_ERROR
        result.error_message = "the evaluation child vanished without a status"
    result.stage_durations["child_wall"] = reply.get("wall_s", 0.0)
    return result
