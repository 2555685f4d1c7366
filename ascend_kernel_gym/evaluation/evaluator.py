"""The evaluator: static stage here, everything else in sandboxed children of a warm pool.

Imports neither torch nor triton (candidate code never runs in this process).
"""

from __future__ import annotations

import atexit
import hashlib
import os
import queue
import threading
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ascend_kernel_gym.evaluation.cache import ResultCache, cache_key, harness_fingerprint
from ascend_kernel_gym.evaluation.errors import REFERENCE_BROKE_DEVICE
from ascend_kernel_gym.evaluation.job import Job
from ascend_kernel_gym.evaluation.lower_stage import run_lower_stage
from ascend_kernel_gym.evaluation.pool import ZygoteError, ZygoteHandle
from ascend_kernel_gym.evaluation.result import HACK_ERROR_TYPES, ErrorType, EvalRequest, EvalResult, Stage
from ascend_kernel_gym.evaluation.static_runner import check_source_bounded as check_source  # time-limited
from ascend_kernel_gym.tasks.task import Task

ASCEND_CHECK_MODES = ("off", "warn", "enforce")
DEFAULT_TIMEOUT_S = {"interpreter": 300.0, "cuda": 180.0, "npu": 300.0}
DEFAULT_MEMORY_MB = {"interpreter": 4096, "cuda": 16384, "npu": 16384}
#: set to ``0`` (or ``false``, ``off``, ``no``) to run evaluators without the OS sandbox by default
OS_SANDBOX_ENV = "AKG_OS_SANDBOX"
#: how the result warning about OS sandbox layers this machine lacks starts
SANDBOX_WARNING_PREFIX = "os_sandbox:"
_SIGNAL_NAMES = {4: "SIGILL", 6: "SIGABRT", 7: "SIGBUS", 8: "SIGFPE", 9: "SIGKILL", 11: "SIGSEGV", 15: "SIGTERM"}


def os_sandbox_default() -> bool:
    """Whether evaluators use the OS sandbox when not told: yes, unless ``AKG_OS_SANDBOX`` says no."""
    return os.environ.get(OS_SANDBOX_ENV, "1").strip().lower() not in ("0", "false", "off", "no")


def _reference_broke_device(result: EvalResult) -> bool:
    return result.error_type == ErrorType.HARNESS_ERROR and result.error_message.startswith(REFERENCE_BROKE_DEVICE)


class Evaluator:
    """Sandboxed, cascaded evaluator of Triton kernels: static -> compile -> correctness -> performance.

    Every candidate runs in a fresh child forked from a warm zygote (torch and triton already
    imported, no device initialised); the calling process never imports candidate code.
    :meth:`evaluate` never raises because of what a candidate does; misuse (a wrong argument
    type, an unknown profile) raises ``ValueError`` / ``TypeError`` at once.

    Args:
        backend: ``auto``, ``interpreter``, ``cuda`` or ``npu``.
        workers: parallel evaluations (zygotes). Default: CPU cores on the interpreter, one per
            visible device otherwise.
        timeout_s: wall-clock limit of one evaluation child (default 300 s on the interpreter,
            180 s on cuda, 300 s on npu); a request's ``timeout_s`` overrides it.
        memory_mb: host memory a child may use beyond its warm start (address-space limit on the
            interpreter, resident-set watch everywhere); default 4096 on the interpreter and
            16384 on devices (CUDA / NPU runtimes and their libraries take gigabytes of host
            memory). ``0`` disables the cap.
        cache: keep results keyed by code, task, backend, profile, trials, version (in memory).
        cache_dir: also keep them on disk here.
        num_trials: correctness trials for requests that leave ``EvalRequest.num_trials`` at
            ``None``; a request that gives a number always gets that number.
        ascend_checks: ``off``, ``warn`` (report Ascend rule findings as warnings) or ``enforce``
            (findings of severity ``error`` fail the evaluation with ``ascend_constraint``).
        ascend_profile: chip profile for the Ascend checks and the cost model.
        ascend_lower: ``off``, ``warn`` or ``enforce``: lower every launched kernel through
            triton-ascend's own compiler front half after the child returns (interpreter and cuda;
            :mod:`.lower_stage`); ``enforce`` fails a kernel that does not lower or overflows UB.
        profile_reps: timed repetitions per model in the timing stage.
        profile_warmup: untimed warm-up calls per model before timing.
        output_cap: bytes of the candidate's printed output kept in the result.
        start: start the workers now (in the background) instead of on first use.
        tmp_root: directory for the workers' temporary directories.
        prefork: keep one spare child per worker, forked ahead and with its device initialised,
            so an evaluation does not wait for process set-up and device start (on CUDA about
            0.2 s). Each child still serves one evaluation; the spare holds a device context
            (a few hundred MB of device memory) while it waits.
        os_sandbox: put every child in the OS sandbox (:mod:`.os_sandbox`: namespaces, a read-only
            view of the libraries and a private scratch directory, no network, Landlock, seccomp)
            before it initialises its device or sees its job. Layers this machine lacks are
            reported (a warning once, and a ``os_sandbox: ...`` result warning) and the others
            stay on. Default: on, unless the environment variable ``AKG_OS_SANDBOX`` is ``0``
            (for debugging only: without it a candidate can read and write what this user can).
    """

    def __init__(
        self,
        backend: str = "auto",
        workers: int | None = None,
        timeout_s: float | None = None,
        memory_mb: int | None = None,
        cache: bool = True,
        cache_dir: str | os.PathLike[str] | None = None,
        num_trials: int = 5,
        ascend_checks: str = "warn",
        ascend_profile: str = "910B3",
        ascend_lower: str = "warn",
        profile_reps: int = 100,
        profile_warmup: int = 3,
        output_cap: int = 16384,
        start: bool = True,
        tmp_root: str | None = None,
        prefork: bool = True,
        os_sandbox: bool | None = None,
    ) -> None:
        from ascend_kernel_gym.backends.detect import resolve_backend

        if ascend_checks not in ASCEND_CHECK_MODES:
            raise ValueError(f"ascend_checks must be one of {ASCEND_CHECK_MODES}, got {ascend_checks!r}")
        if ascend_lower not in ASCEND_CHECK_MODES:
            raise ValueError(f"ascend_lower must be one of {ASCEND_CHECK_MODES}, got {ascend_lower!r}")
        if workers is not None and (not isinstance(workers, int) or workers < 1):
            raise ValueError(f"workers must be a positive int or None, got {workers!r}")
        if timeout_s is not None and timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, got {timeout_s!r}")
        if num_trials < 1:
            raise ValueError(f"num_trials must be >= 1, got {num_trials!r}")
        if profile_reps < 1 or profile_warmup < 0:
            raise ValueError("profile_reps must be >= 1 and profile_warmup >= 0")
        self.backend = resolve_backend(backend)
        self.workers = workers or self._default_workers()
        self.timeout_s = float(timeout_s or DEFAULT_TIMEOUT_S[self.backend])
        self.memory_mb = int(memory_mb if memory_mb is not None else DEFAULT_MEMORY_MB[self.backend])
        self.num_trials = int(num_trials)
        self.ascend_checks = ascend_checks
        self.ascend_profile = ascend_profile
        self.ascend_lower = ascend_lower
        self.profile_reps = int(profile_reps)
        self.profile_warmup = int(profile_warmup)
        self.output_cap = int(output_cap)
        self.os_sandbox = os_sandbox_default() if os_sandbox is None else bool(os_sandbox)
        self.cache = ResultCache(directory=cache_dir) if (cache or cache_dir is not None) else None
        cores = os.cpu_count() or 1
        threads = (
            max(1, cores // self.workers) if self.backend == "interpreter" else max(1, min(4, cores // self.workers))
        )
        devices = self._device_count()
        self._handles = [
            ZygoteHandle(
                self.backend,
                device_index=(i % devices) if self.backend != "interpreter" else None,
                threads=threads,
                tmp_root=tmp_root,
                prefork=prefork,
                os_sandbox=self.os_sandbox,
            )
            for i in range(self.workers)
        ]
        self._idle: queue.Queue[ZygoteHandle] = queue.Queue()
        for handle in self._handles:
            self._idle.put(handle)
        self._closed = False
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self.stats = {"evaluations": 0, "cache_hits": 0, "static_rejects": 0, "worker_restarts": 0}
        #: (task id, profile) whose reference broke the device on varied inputs: task inputs only
        self._task_inputs_only: set[tuple[str, str]] = set()
        if start:
            for handle in self._handles:
                threading.Thread(target=self._start_quietly, args=(handle,), daemon=True).start()

    # --- configuration --------------------------------------------------------------------------
    def _default_workers(self) -> int:
        if self.backend == "interpreter":
            return max(1, os.cpu_count() or 1)
        return max(1, self._device_count())

    def _device_count(self) -> int:
        if self.backend == "interpreter":
            return 1
        key = "CUDA_VISIBLE_DEVICES" if self.backend == "cuda" else "ASCEND_RT_VISIBLE_DEVICES"
        visible = os.environ.get(key)
        if visible:
            return max(1, len([v for v in visible.split(",") if v.strip()]))
        from ascend_kernel_gym.backends.detect import device_info

        try:
            return max(1, int(device_info(self.backend).num_devices))
        except Exception:  # noqa: BLE001 - fall back to one device
            return 1

    @staticmethod
    def _start_quietly(handle: ZygoteHandle) -> None:
        with handle.lock:
            if handle.alive():
                return
            try:
                handle.start()
            except Exception:  # noqa: BLE001, S110 - the first job retries and reports
                pass

    # --- public API -----------------------------------------------------------------------------
    def evaluate(self, request: EvalRequest) -> EvalResult:
        """Evaluate one candidate. Never raises because of the candidate's behaviour."""
        if self._closed:
            raise RuntimeError("Evaluator.evaluate() called after close()")
        self._validate(request)
        started = time.perf_counter()
        task = request.task
        profile = request.profile or task.default_profile(self.backend)
        task.check_profile(profile)
        num_trials = self.num_trials if request.num_trials is None else int(request.num_trials)
        code = request.code if isinstance(request.code, str) else ""
        code_hash = hashlib.sha256(code.encode("utf-8", errors="replace")).hexdigest()
        key = self._cache_key(request, profile, code_hash, num_trials)
        if self.cache is not None:
            cached = self.cache.get(key)
            if cached is not None:
                with self._lock:
                    self.stats["cache_hits"] += 1
                return cached
        result = EvalResult(task_id=task.id, backend=self.backend, profile=profile, code_hash=code_hash)
        report = check_source(code)
        result.stage_durations["static"] = round(time.perf_counter() - started, 4)
        result.format_ok = report.error_type != ErrorType.NO_CODE
        if not report.ok:
            result.stage = Stage.FORMAT if not result.format_ok else Stage.STATIC
            result.error_type = report.error_type
            result.error_message = report.message()
            result.warnings = list(report.warnings)
            if result.error_type in HACK_ERROR_TYPES:
                result.hack = True
                result.hack_reasons = [f"{result.error_type.value}: {v.render()}" for v in report.violations][:8]
            with self._lock:
                self.stats["static_rejects"] += 1
        else:
            result.static_ok = True
            job = Job(
                task=task,
                code=code,
                code_hash=code_hash,
                backend=self.backend,
                profile=profile,
                num_trials=num_trials,
                measure_performance=bool(request.measure_performance),
                seed=request.seed,
                memory_mb=self.memory_mb,
                output_cap=self.output_cap,
                ascend_checks=self.ascend_checks,
                ascend_profile=self.ascend_profile,
                profile_reps=self.profile_reps,
                profile_warmup=self.profile_warmup,
                static_warnings=list(report.warnings),
                kernels=sorted(set(report.kernels)),
                paths=sorted(report.paths),
                escaping=sorted(report.escaping),
            )
            timeout = float(request.timeout_s or self.timeout_s)
            job.task_inputs_only = (task.id, profile) in self._task_inputs_only
            before = EvalResult.from_dict(result.to_dict())
            result = self._run_job(job, timeout, result)
            if _reference_broke_device(result) and not job.task_inputs_only:
                # The reference cannot take the varied inputs on this device, and the child's
                # device is lost: run again (and from now on) with the task's own inputs only.
                with self._lock:
                    self._task_inputs_only.add((task.id, profile))
                job.task_inputs_only = True
                result = self._run_job(job, timeout, before)
            result = run_lower_stage(result, job, self.ascend_lower, self.os_sandbox)
        result.stage_durations["total"] = round(time.perf_counter() - started, 4)
        with self._lock:
            self.stats["evaluations"] += 1
        if self.cache is not None:
            self.cache.put(key, result)
        return result

    def evaluate_many(self, requests: Iterable[EvalRequest], progress: bool = False) -> list[EvalResult]:
        """Evaluate several candidates in parallel over the workers; results in request order."""
        items = list(requests)
        for request in items:
            self._validate(request)
        if not items:
            return []
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="akg-eval")
            executor = self._executor
        futures = [executor.submit(self.evaluate, request) for request in items]
        if progress:
            from concurrent.futures import as_completed

            from tqdm import tqdm

            for _ in tqdm(as_completed(futures), total=len(futures), desc="evaluating", unit="kernel"):
                pass
        return [future.result() for future in futures]

    def warm_up(self, timeout_s: float = 600.0) -> None:
        """Block until every worker is started (useful before timing anything)."""
        deadline = time.monotonic() + timeout_s
        for handle in self._handles:
            left = max(1.0, deadline - time.monotonic())
            if not handle.lock.acquire(timeout=left):
                raise TimeoutError("evaluator workers did not start in time")
            try:
                if not handle.alive():
                    handle.start()
            finally:
                handle.lock.release()

    def close(self) -> None:
        """Stop the workers. Further evaluate() calls raise."""
        if self._closed:
            return
        self._closed = True
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
        for handle in self._handles:
            with handle.lock:
                handle.close()

    def __enter__(self) -> Evaluator:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:  # pragma: no cover - best effort
        try:
            if not self._closed:
                for handle in self._handles:
                    handle.kill()
        except Exception:  # noqa: BLE001, S110
            pass

    # --- internals ------------------------------------------------------------------------------
    @staticmethod
    def _validate(request: EvalRequest) -> None:
        if not isinstance(request, EvalRequest):
            raise TypeError(f"request must be an EvalRequest, got {type(request).__name__}")
        if not isinstance(request.task, Task):
            raise TypeError(f"request.task must be a Task, got {type(request.task).__name__}")
        if not isinstance(request.code, str):
            raise TypeError(f"request.code must be a str, got {type(request.code).__name__}")
        if request.num_trials is not None and (not isinstance(request.num_trials, int) or request.num_trials < 1):
            raise ValueError(f"request.num_trials must be a positive int or None, got {request.num_trials!r}")
        if request.timeout_s is not None and request.timeout_s <= 0:
            raise ValueError(f"request.timeout_s must be positive, got {request.timeout_s!r}")

    def _cache_key(self, request: EvalRequest, profile: str, code_hash: str, num_trials: int) -> str:
        from ascend_kernel_gym import __version__

        return cache_key(
            {
                "code": code_hash,
                "task": request.task.id,
                "task_source": request.task.source_hash,
                "atol": request.task.atol,
                "rtol": request.task.rtol,
                "backend": self.backend,
                "profile": profile,
                "num_trials": num_trials,
                "perf": bool(request.measure_performance),
                "seed": request.seed,
                "ascend": [self.ascend_checks, self.ascend_profile, self.ascend_lower],
                "reps": [self.profile_reps, self.profile_warmup],
                "os_sandbox": self.os_sandbox,
                "version": __version__,
                "harness": harness_fingerprint(),
            }
        )

    def _run_job(self, job: Job, timeout: float, result: EvalResult) -> EvalResult:
        handle = self._idle.get()
        try:
            with handle.lock:
                starts = handle.starts
                for attempt in range(2):
                    try:
                        reply = handle.run(job, timeout, self.memory_mb)
                        break
                    except ZygoteError as exc:
                        if attempt == 1:
                            result.stage = Stage.COMPILE
                            result.error_type = ErrorType.HARNESS_ERROR
                            result.error_message = f"evaluator worker failure: {exc}"
                            return result
                if handle.starts > starts + (0 if starts else 1):
                    with self._lock:
                        self.stats["worker_restarts"] += 1
                missing_layers = list(handle.missing_layers)
        finally:
            self._idle.put(handle)
        result = self._result_from_reply(reply, job, timeout, result)
        if missing_layers:
            result.warnings.append(
                f"{SANDBOX_WARNING_PREFIX} layers off on this machine: {', '.join(missing_layers)} (see `akg doctor`)"
            )
        return result

    def _result_from_reply(self, reply: dict[str, Any], job: Job, timeout: float, base: EvalResult) -> EvalResult:
        from ascend_kernel_gym.evaluation.feedback import scrub_text

        data = reply.get("result")
        if isinstance(data, dict):
            try:
                result = EvalResult.from_dict(data)
            except (ValueError, TypeError, KeyError) as exc:
                base.error_type = ErrorType.HARNESS_ERROR
                base.error_message = f"the evaluation child sent an unreadable result ({exc})"
                return base
            result.stage_durations["child_wall"] = reply.get("wall_s", 0.0)
            return result
        # The child died without reporting.
        result = base
        result.stage = Stage.COMPILE
        status = reply.get("status")
        reason = reply.get("reason", "")
        tail = scrub_text(reply.get("output_tail", ""), reply.get("sandbox"))
        result.output_tail = tail[-job.output_cap :]
        if reason == "timeout":
            result.error_type = ErrorType.TIMEOUT
            result.error_message = f"the evaluation did not finish within {timeout:g} s (infinite loop or far too slow)"
        elif reason == "not_started":
            result.error_type = ErrorType.HARNESS_ERROR
            result.error_message = "the evaluation child died before it started the evaluation (twice)"
        elif reason == "memory":
            result.error_type = ErrorType.OOM
            result.error_message = f"the process used more than {self.memory_mb} MB of memory and was stopped"
        elif status is not None and os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            name = _SIGNAL_NAMES.get(sig, f"signal {sig}")
            if sig == 9:
                result.error_type = ErrorType.OOM
                result.error_message = (
                    "the process was killed (SIGKILL), most likely by the system's out-of-memory killer"
                )
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


_SHARED: dict[tuple[str, tuple[tuple[str, str], ...]], Evaluator] = {}
_SHARED_LOCK = threading.Lock()


def get_shared_evaluator(backend: str = "auto", **options: Any) -> Evaluator:
    """One process-wide evaluator per (backend, options): many envs and threads share one pool."""
    key = (backend, tuple(sorted((k, repr(v)) for k, v in options.items())))
    with _SHARED_LOCK:
        evaluator = _SHARED.get(key)
        if evaluator is None or evaluator._closed:
            evaluator = Evaluator(backend=backend, **options)
            _SHARED[key] = evaluator
        return evaluator


def close_shared_evaluators() -> None:
    """Close every evaluator made by :func:`get_shared_evaluator` (also runs at exit)."""
    with _SHARED_LOCK:
        evaluators = list(_SHARED.values())
        _SHARED.clear()
    for evaluator in evaluators:
        try:
            evaluator.close()
        except Exception:  # noqa: BLE001, S110
            pass


atexit.register(close_shared_evaluators)
