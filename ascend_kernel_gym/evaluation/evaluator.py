"""The evaluator: static stage here, everything else in sandboxed children of a warm pool.

Imports neither torch nor triton (candidate code never runs in this process).
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import math
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from ascend_kernel_gym.evaluation import cuda_sync
from ascend_kernel_gym.evaluation.cache import ResultCache, cache_key, harness_fingerprint
from ascend_kernel_gym.evaluation.concurrency import (
    ASSUMED_DEVICE_GIB,
    DeviceGate,
    available_cores,
    default_workers_per_device,
    device_id,
    device_memory,
    device_share,
    failure_summary,
    mark_retried,
    neighbour_oom,
    visible_devices,
    was_retried,
)
from ascend_kernel_gym.evaluation.dispatch import DurationBook, WorkerQueue, weight
from ascend_kernel_gym.evaluation.errors import REFERENCE_BROKE_DEVICE
from ascend_kernel_gym.evaluation.job import Job
from ascend_kernel_gym.evaluation.lower_stage import run_lower_stage
from ascend_kernel_gym.evaluation.memory_book import MemoryBook, measured_need, retry_need
from ascend_kernel_gym.evaluation.pool import ZygoteError, ZygoteHandle, judge_mode_from_env, result_from_reply
from ascend_kernel_gym.evaluation.result import ErrorType, EvalRequest, EvalResult, Stage
from ascend_kernel_gym.evaluation.static_runner import check_source_bounded as check_source  # time-limited
from ascend_kernel_gym.tasks.task import Task

ASCEND_CHECK_MODES = ("off", "warn", "enforce")
EXECUTORS = ("local", "ray")
DEFAULT_TIMEOUT_S = {"interpreter": 300.0, "cuda": 180.0, "npu": 300.0}
DEFAULT_MEMORY_MB = {"interpreter": 4096, "cuda": 16384, "npu": 16384}
#: seconds the timed rounds of one evaluation may take before slow models get fewer of them
#: (``profile_budget_s``): pairs of calls over 10 ms get 20 to 100 rounds. With 2 s the speedups of
#: the 45 reference solutions moved by at most 1.45 % against 100 rounds each on an H100; halved, it
#: takes about 6 s off the burst's leases, the part that several workers per device cannot share
#: (docs/scaling.md)
DEFAULT_PROFILE_BUDGET_S = 1.0
#: ``evaluate_many`` lets this many callers per worker wait at once (the one that takes up most of
#: the device goes first, .dispatch). With four, a burst's large evaluations that came after the
#: first 32 of 90 were not seen until late (an H100 burst at eight workers, 2026-12-06).
DISPATCH_DEPTH = 16
#: added to a wrong result of a bf16 task on the interpreter: Triton 3.9's interpreter computes
#: arithmetic on bf16 values wrongly (a bf16 `x + y` gives values near 1e38), a valid kernel fails
BF16_INTERPRETER_NOTE = (
    "interpreter: Triton's CPU interpreter computes arithmetic on bfloat16 values wrongly (Triton 3.9: "
    "`x + y` of two bf16 blocks gives values near 1e38); if this kernel does bf16 math, convert to "
    "float32 after loading (`.to(tl.float32)`) and back before storing"
)
#: set to ``0`` (or ``false``, ``off``, ``no``) to run evaluators without the OS sandbox by default
OS_SANDBOX_ENV = "AKG_OS_SANDBOX"
#: how the result warning about OS sandbox layers this machine lacks starts
SANDBOX_WARNING_PREFIX = "os_sandbox:"


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
        backend: ``auto``, ``interpreter``, ``cuda`` or ``npu``. With ``executor="ray"``, ``auto``
            is what the cluster has (NPUs, else GPUs, else the interpreter on CPUs).
        workers: parallel evaluations (zygotes) in all; spread over the visible devices. Default:
            ``workers_per_device`` times the devices. Not with ``executor="ray"``. Host cores
            count as the process's CPU affinity, or ``AKG_CPUS``.
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
        profile_budget_s: bound the timed repetitions by time: a model pair whose calls take
            longer than ``profile_budget_s / profile_reps`` gets ``ceil(profile_budget_s / pair
            time)`` repetitions, at least :data:`.timing.MIN_BUDGET_REPS` (the pair time read on
            the quiet device before the timed rounds). Default :data:`DEFAULT_PROFILE_BUDGET_S`;
            None: always ``profile_reps``.
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
        workers_per_device: workers sharing one device (they compile and check at the same time;
            timing holds the device alone). Default: :func:`.concurrency.default_workers_per_device`
            (host cores on the interpreter; on devices from the cores and the device memory, at
            most 8). Several workers on a device are held back while its memory is short, and an
            evaluation that ran out of memory next to a neighbour is run once more with room for
            twice what it took (alone on the device if it runs out again), its result marked
            ``retried:``.
        executor: ``local`` (default: a pool of this machine's devices) or ``ray`` (one actor per
            device of a Ray cluster, each running a local pool; extra ``ray``; see
            :mod:`.ray_executor`). Same API and results either way.
        address: ``ray`` only: the cluster (``ray://auto``, ``ray://HOST:PORT``, ``auto``, ``HOST:6379``;
            default: ``RAY_ADDRESS`` or a new local instance).
        actors: ``ray`` only: pool actors (default: one per device of the cluster).
        ray_options: ``ray`` only: extra Ray options for the pool actors (e.g. a custom resource).
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
        *,
        workers_per_device: int | None = None,
        profile_budget_s: float | None = DEFAULT_PROFILE_BUDGET_S,
        executor: str = "local",
        address: str | None = None,
        actors: int | None = None,
        ray_options: Mapping[str, Any] | None = None,
    ) -> None:
        from ascend_kernel_gym.backends.detect import resolve_backend

        judge_mode_from_env()  # a misspelt AKG_JUDGE fails here, not at the first evaluation
        cuda_sync.setting_from_env()  # and AKG_CUDA_SYNC
        if executor not in EXECUTORS:
            raise ValueError(f"executor must be one of {EXECUTORS}, got {executor!r}")
        if executor == "local" and (address is not None or actors is not None or ray_options is not None):
            raise ValueError("address, actors and ray_options are for executor='ray'")
        if executor == "ray" and workers is not None:
            raise ValueError("executor='ray' takes workers_per_device (per actor) and actors, not workers")
        if workers_per_device is not None and (not isinstance(workers_per_device, int) or workers_per_device < 1):
            raise ValueError(f"workers_per_device must be a positive int or None, got {workers_per_device!r}")
        if workers is not None and workers_per_device is not None:
            raise ValueError("give workers (in all) or workers_per_device, not both")
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
        if profile_budget_s is not None and not (
            isinstance(profile_budget_s, (int, float))
            and not isinstance(profile_budget_s, bool)
            and math.isfinite(profile_budget_s)
            and profile_budget_s > 0
        ):
            raise ValueError(f"profile_budget_s must be a positive number of seconds or None, got {profile_budget_s!r}")
        self.executor = executor
        self.num_trials = int(num_trials)
        self.ascend_checks = ascend_checks
        self.ascend_profile = ascend_profile
        self.ascend_lower = ascend_lower
        self.profile_reps = int(profile_reps)
        self.profile_warmup = int(profile_warmup)
        self.profile_budget_s = None if profile_budget_s is None else float(profile_budget_s)
        self.output_cap = int(output_cap)
        self.os_sandbox = os_sandbox_default() if os_sandbox is None else bool(os_sandbox)
        self._closed = False
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self.stats = {
            "evaluations": 0, "cache_hits": 0, "static_rejects": 0, "worker_restarts": 0, "retries": 0,
            "memory_waits": 0,
        }  # fmt: skip
        #: (task id, profile) whose reference broke the device on varied inputs: task inputs only
        self._task_inputs_only: set[tuple[str, str]] = set()
        self._handles: list[ZygoteHandle] = []
        self._gates: dict[int, DeviceGate] = {}
        #: each task's device-memory need, from its finished evaluations (admission to a shared device)
        self._memory_book = MemoryBook()
        self._duration_book = DurationBook()
        self._ray: Any = None
        if executor == "ray":
            self._start_ray(
                dict(backend=backend, timeout_s=timeout_s, memory_mb=memory_mb, num_trials=num_trials,
                     ascend_checks=ascend_checks, ascend_profile=ascend_profile, ascend_lower=ascend_lower,
                     profile_reps=profile_reps, profile_warmup=profile_warmup, output_cap=output_cap,
                     tmp_root=tmp_root, prefork=prefork, os_sandbox=self.os_sandbox, start=start,
                     workers_per_device=workers_per_device, profile_budget_s=profile_budget_s),
                address, actors, ray_options, cache, cache_dir,
            )  # fmt: skip
            return
        self.backend = resolve_backend(backend)
        self.timeout_s = float(timeout_s or DEFAULT_TIMEOUT_S[self.backend])
        self.memory_mb = int(memory_mb if memory_mb is not None else DEFAULT_MEMORY_MB[self.backend])
        self.cache = ResultCache(directory=cache_dir) if (cache or cache_dir is not None) else None
        cores = available_cores()
        devices = self._device_count()
        if workers is None:
            self.workers_per_device = workers_per_device or self._default_workers_per_device(cores, devices)
            workers = self.workers_per_device * devices
        else:
            self.workers_per_device = max(1, -(-workers // devices))
        self._workers = workers
        threads = (
            max(1, cores // self.workers) if self.backend == "interpreter" else max(1, min(4, cores // self.workers))
        )
        for i in range(self.workers):
            device = (i % devices) if self.backend != "interpreter" else None
            self._handles.append(
                ZygoteHandle(
                    self.backend,
                    device_index=device,
                    threads=threads,
                    tmp_root=tmp_root,
                    prefork=prefork,
                    os_sandbox=self.os_sandbox,
                )
            )
            key = device or 0
            if key not in self._gates:
                memory = functools.partial(device_memory, self.backend, device_id(self.backend, key))
                on_device = self.backend != "interpreter"
                self._gates[key] = DeviceGate(
                    memory if on_device else None,
                    workers=self.workers_per_device,
                    total_bytes=(ASSUMED_DEVICE_GIB.get(self.backend, 16) << 30) if on_device else None,
                )
        self._queue: WorkerQueue[ZygoteHandle] = WorkerQueue(
            list(self._handles),
            load=lambda h: self._gates[h.device_index or 0].load,
            fits=lambda h, need: self._gates[h.device_index or 0].fits(need),
        )
        if start:
            for handle in self._handles:
                threading.Thread(target=self._start_quietly, args=(handle,), daemon=True).start()

    def _start_ray(
        self,
        pool_options: dict[str, Any],
        address: str | None,
        actors: int | None,
        ray_options: Mapping[str, Any] | None,
        cache: bool,
        cache_dir: str | os.PathLike[str] | None,
    ) -> None:
        from ascend_kernel_gym.evaluation.ray_executor import RayExecutor, RayResultCache

        key = {k: v for k, v in pool_options.items() if k not in ("backend", "start", "tmp_root")}
        self._ray = RayExecutor(
            functools.partial(Evaluator, **{k: v for k, v in pool_options.items() if k != "backend"}, cache=False),
            key,
            backend=pool_options["backend"],
            address=address,
            actors=actors,
            workers_per_device=pool_options["workers_per_device"],
            ray_options=ray_options,
        )
        self.backend = self._ray.backend
        self.timeout_s = float(pool_options["timeout_s"] or DEFAULT_TIMEOUT_S[self.backend])
        self.memory_mb = int(pool_options["memory_mb"] or DEFAULT_MEMORY_MB[self.backend])
        self.workers_per_device = pool_options["workers_per_device"] or 0
        self.cache = (
            RayResultCache(None if cache_dir is None else str(cache_dir)) if (cache or cache_dir is not None) else None
        )

    # --- configuration --------------------------------------------------------------------------
    def _default_workers_per_device(self, cores: int, devices: int) -> int:
        reading = device_memory(self.backend, device_id(self.backend, 0)) if self.backend != "interpreter" else None
        return default_workers_per_device(self.backend, cores, devices, reading[1] if reading else None)

    def _device_count(self) -> int:
        if self.backend == "interpreter":
            return 1
        visible = visible_devices(self.backend)
        if visible:
            return len(visible)
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
        if self._ray is not None:
            result = self._ray.evaluate(request, float(request.timeout_s or self.timeout_s), result)
            with self._lock:
                self.stats["retries"] += was_retried(result)
                self.stats["actor_replacements"] = self._ray.stats["actor_replacements"]
        else:
            result = self._evaluate_here(request, code, code_hash, profile, num_trials, result)
            result.stage_durations["total"] = round(time.perf_counter() - started, 4)
        with self._lock:
            self.stats["evaluations"] += 1
        if self.cache is not None:
            self.cache.put(key, result)
        return result

    def _evaluate_here(
        self, request: EvalRequest, code: str, code_hash: str, profile: str, num_trials: int, result: EvalResult
    ) -> EvalResult:
        """Static check here, the rest in a worker of this process's pool."""
        started = time.perf_counter()
        task = request.task
        report = check_source(code)
        result.stage_durations["static"] = round(time.perf_counter() - started, 4)
        result.format_ok = report.error_type != ErrorType.NO_CODE
        if not report.ok:
            result.stage = Stage.FORMAT if not result.format_ok else Stage.STATIC
            result.error_type = report.error_type
            result.error_message = report.message()
            result.warnings = list(report.warnings)
            if report.hack:  # an unused forbidden import is refused, but is no attempt to game the harness
                result.hack = True
                result.hack_reasons = [f"{v.error_type.value}: {v.render()}" for v in report.hack_violations][:8]
            with self._lock:
                self.stats["static_rejects"] += 1
            return result
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
            profile_budget_s=self.profile_budget_s,
            device_share=device_share(self.backend, self.workers_per_device),
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
        return run_lower_stage(result, job, self.ascend_lower, self.os_sandbox)

    def evaluate_many(
        self,
        requests: Iterable[EvalRequest],
        progress: bool = False,
        on_result: Callable[[int, EvalResult], None] | None = None,
    ) -> list[EvalResult]:
        """Evaluate several candidates in parallel over the workers; exactly one result per request, in order.

        ``on_result(index, result)``, if given, is called as each result comes in (``index`` into
        ``requests``), from the thread that evaluated it; an exception it raises is raised here.
        """
        items = list(requests)
        for request in items:
            self._validate(request)
        if not items:
            return []
        with self._lock:
            if self._executor is None:
                # Locally, more callers than workers wait at once, so that the largest one
                # can go first whenever a worker frees (.dispatch.WorkerQueue).
                threads = self._ray.max_parallel if self._ray is not None else self.workers * DISPATCH_DEPTH
                self._executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="akg-eval")
            executor = self._executor
        # Submitted largest first (beyond the callers waiting at once, the executor's own queue is
        # first come, first served); the results keep the requests' order.
        expected = [self._rank(request) for request in items]
        futures: list[Future[EvalResult]] = [None] * len(items)  # type: ignore[list-item]

        def run(index: int) -> EvalResult:
            result = self.evaluate(items[index])
            if on_result is not None:
                on_result(index, result)
            return result

        for i in sorted(range(len(items)), key=lambda i: -expected[i]):
            futures[i] = executor.submit(run, i)
        if progress:
            from concurrent.futures import as_completed

            from tqdm import tqdm

            for _ in tqdm(as_completed(futures), total=len(futures), desc="evaluating", unit="kernel"):
                pass
        return [future.result() for future in futures]

    def _rank(self, request: EvalRequest) -> float:
        """How much of a device ``request``'s evaluation is expected to take up (.dispatch.weight)."""
        profile = request.profile or request.task.default_profile(self.backend)
        code = request.code if isinstance(request.code, str) else ""
        return self._weight(request.task, profile, code, self._memory_book.need(request.task, profile))

    def _weight(self, task: Task, profile: str, code: str, need: int | None) -> float:
        """:func:`.dispatch.weight` of an evaluation of ``code`` expected to take ``need`` bytes."""
        expected_s = self._duration_book.expected_s(task, profile, code)
        if self._ray is not None or not self._gates:
            return expected_s
        gate = self._gates[0]
        return weight(expected_s, need, gate.room(), gate.workers)

    @property
    def workers(self) -> int:
        """Evaluations that run at once: the pool's workers (with Ray: the started actors' workers together)."""
        return self._ray.capacity if self._ray is not None else self._workers

    @property
    def device_name(self) -> str:
        """The name of the device evaluations run on (with Ray: as the first started actor reports it)."""
        if self._ray is not None:
            return self._ray.device_name()
        from ascend_kernel_gym.backends.detect import device_info

        return device_info(self.backend).name

    @property
    def evaluator_id(self) -> str:
        """Equal for two evaluators that share one pool: the Ray pool's name; empty for a local pool."""
        return f"ray:{self._ray.name}" if self._ray is not None else ""

    def warm_up(self, timeout_s: float = 600.0) -> None:
        """Block until every worker (with Ray: every actor and its workers) is started."""
        if self._ray is not None:
            self._ray.warm_up(timeout_s)
            return
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
        """Stop the workers (with Ray: the actors this process made). Further evaluate() calls raise."""
        if self._closed:
            return
        self._closed = True
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
        if self._ray is not None:
            self._ray.close()
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
                # the profile's sizes (a small profile derived to AKG_SMALL_BUDGET changes with it)
                "sizes": repr(sorted(request.task.profiles.get(profile, {}).items())),
                "num_trials": num_trials,
                "perf": bool(request.measure_performance),
                "seed": request.seed,
                "ascend": [self.ascend_checks, self.ascend_profile, self.ascend_lower],
                "reps": [self.profile_reps, self.profile_warmup, self.profile_budget_s],
                "os_sandbox": self.os_sandbox,
                # the timing stage's gate on cuda (evaluation/device_gate.py) changes how calls are timed
                "timing_gate": os.environ.get("AKG_TIMING_GATE", "").strip().lower(),
                "version": __version__,
                "harness": harness_fingerprint(),
            }
        )

    def _run_job(self, job: Job, timeout: float, result: EvalResult) -> EvalResult:
        # Of the evaluations waiting that fit, the one that takes up most of a device gets the next
        # idle worker (.dispatch).
        book = self._memory_book
        asked = time.perf_counter()
        need = book.need(job.task, job.profile)
        if job.device_share < 1.0:  # the judge's share of the reservation, idle while it times
            job.keep_device_bytes = book.idle_in_timing(job.task, job.profile)
        handle, queued_for_memory = self._queue.take(self._weight(job.task, job.profile, job.code, need), need)
        taken = time.perf_counter()
        gate = self._gates[handle.device_index or 0]
        try:
            base = EvalResult.from_dict(result.to_dict())
            # asked again: another evaluation of the task may have finished while this one waited
            with gate.slot(need=book.need(job.task, job.profile)) as slot:
                out = self._run_on(handle, job, timeout, result)
            book.observe(job.task, job.profile, out)
            self._duration_book.observe(job.task, job.profile, out)
            if slot.held_for_memory or queued_for_memory:
                with self._lock:
                    self.stats["memory_waits"] += 1
            if neighbour_oom(out, slot.had_neighbour):
                out = self._run_again(handle, job, timeout, base, out, gate)
            # seconds waiting for a worker, for the device's gate (memory, an exclusive run), and
            # holding the worker (retries included)
            out.stage_durations["queued"] = round(taken - asked, 4)
            out.stage_durations["device_wait"] = slot.waited_s
            out.stage_durations["worker"] = round(time.perf_counter() - taken, 4)
            return out
        finally:
            self._queue.give_back(handle)

    def _run_again(
        self, handle: ZygoteHandle, job: Job, timeout: float, base: EvalResult, failed: EvalResult, gate: DeviceGate
    ) -> EvalResult:
        """Run an evaluation that ran out of memory next to a neighbour once more: next to others
        with room for twice what it took (:func:`.memory_book.retry_need`), and if it runs out
        again next to one, alone on the device. Emptying the device for every retry held it for
        the longest neighbour's whole evaluation (25 s for one decoder block, H100, 2026-12-06)."""
        book = self._memory_book
        first = failure_summary(failed)
        need = retry_need(book.need(job.task, job.profile), measured_need(failed), gate.room(), gate.workers)
        with gate.slot(need=need) as again:
            waited = again.waited_s
            out = self._run_on(handle, job, timeout, base)
        book.observe(job.task, job.profile, out)
        how = "next to the others" if need is None else f"with room for {need / 2**30:.1f} GiB next to the others"
        if neighbour_oom(out, again.had_neighbour):
            second = failure_summary(out)
            with gate.slot(exclusive=True) as alone:
                waited += alone.waited_s
                out = self._run_on(handle, job, timeout, base)
            book.observe(job.task, job.profile, out)
            how = f"alone on it (run {how}, it ran out of memory again: {second})"
        out.stage_durations["retry_wait"] = round(waited, 4)
        with self._lock:
            self.stats["retries"] += 1
        mark_retried(
            out,
            f"it ran out of memory while another evaluation shared the device; run again {how}"
            f" after waiting {waited:.1f} s for the device (first run: {first})",
        )
        return out

    def _run_on(self, handle: ZygoteHandle, job: Job, timeout: float, result: EvalResult) -> EvalResult:
        """Run ``job`` on worker ``handle`` (restarted once if it fails) and read its reply."""
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
        result = result_from_reply(reply, job.output_cap, timeout, self.memory_mb, result)
        if (
            job.backend == "interpreter"
            and result.error_type in (ErrorType.VALUE_MISMATCH, ErrorType.NAN_OR_INF)
            and (job.task.dtype == "bfloat16" or "bfloat16" in job.code)
        ):
            result.warnings.append(BF16_INTERPRETER_NOTE)
        if missing_layers:
            result.warnings.append(
                f"{SANDBOX_WARNING_PREFIX} layers off on this machine: {', '.join(missing_layers)} (see `akg doctor`)"
            )
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
