"""Compiling a candidate's Triton kernels ahead, in a child that has no device (cuda, opt-in).

Triton compiles a kernel at its first launch, on the host's CPU: most of a level-2 or level-3
evaluation's time before timing (a decoder block's first call took 8.9 s of its 23.5 s on an H100,
its shape cases as much again). While another evaluation times on a shared device, the candidate's
child is stopped (:mod:`.device_lease`), compiling or not: the zygote cannot tell a process that
compiles from one that submits device work. A process that *cannot* reach the device can go on.

So, next to the candidate's child, the zygote forks a **precompile child**
(:func:`precompile_entry`): its OS sandbox has no device node (and it refuses to run any candidate
code if one opens anyway); Triton in it gets a driver that only knows the device's compile target
(read by the zygote's warm-up) and launches nothing. It imports the candidate under the same
sandbox guard as the candidate's child and calls ``ModelNew`` on CPU tensors of the task's shapes,
the main case first, then the shape cases of the correctness trials. Each kernel it reaches is
compiled into its own Triton cache; the zygote copies every finished entry into the candidate
child's cache (:mod:`.precompile_run`), where the same launch finds it: the cache key holds the
source, the specialisation, the options and the target, none of which depend on the device.

Nothing it does decides anything: a candidate that behaves otherwise without a device (checks
``is_cuda``, creates CUDA tensors, reads values) only compiles less ahead, and its child compiles
the rest at its first call, as without this. Random draws in the task's inputs and in the model's
construction are replaced by constant fills here (a full-size CPU ``randn`` takes seconds; the
values do not change what is compiled).

Imports torch and triton: only the zygote's children import this module.
"""

from __future__ import annotations

import glob
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable
from typing import Any, NoReturn

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from ascend_kernel_gym.evaluation.job import Job
from ascend_kernel_gym.evaluation.os_sandbox_paths import CUDA_DEVICES
from ascend_kernel_gym.evaluation.precompile_run import (
    ENDED,
    MAIN_DONE,
    PRECOMPILE_MAX_S,
    READY,
    PrecompileRun,
    write_mark,
)
from ascend_kernel_gym.evaluation.process import ChildSetup, Prepared, cap_address_space, library_dirs, prepare_host

#: exit codes of the child (for the zygote's statistics; none of them is an error of the candidate)
EXIT_DONE, EXIT_SETUP, EXIT_DEVICE_REACHABLE, EXIT_GUARD = 0, 3, 4, 5
#: the child's niceness where the idle scheduling class is refused
NICE = 19


def precompile_entry(
    setup: ChildSetup, job: Job, target: dict[str, Any], profile: str, devices: tuple[str, ...] = CUDA_DEVICES
) -> NoReturn:
    """Entry point of a forked precompile child (never returns). ``devices``: the device nodes it
    must not be able to open once in its sandbox (it exits before any candidate code otherwise)."""
    try:
        os.setpgid(0, 0)
    except OSError:
        pass
    try:
        prepare_host(setup, Prepared())
        if device_reachable(devices):
            os._exit(EXIT_DEVICE_REACHABLE)
        lower_priority()
        if job.memory_mb > 0:  # the job's host-memory cap, on the address space: no device runtime here
            cap_address_space(job.memory_mb)
        install_compile_only(target)
    except BaseException:  # noqa: BLE001 - nothing to report: the candidate's child compiles itself
        os._exit(EXIT_SETUP)
    code = precompile(job, profile, setup.sandbox)
    os._exit(code)


def start_precompile(
    root: str,
    job: Any,
    target: dict[str, Any],
    candidate_sandbox: str,
    close_fds: Iterable[int],
    torch_threads: int,
    until: float,
    warm_cache: str | None = None,
) -> PrecompileRun | None:
    """Fork the precompile child of ``job`` (whose candidate's child works in ``candidate_sandbox``);
    None if it cannot be forked. ``close_fds``: the zygote's descriptors, closed in the child;
    ``until``: the job's deadline (``time.perf_counter``), which ends the child too; ``warm_cache``:
    the zygote's warm Triton cache (the child starts from a copy, as the candidate's child does)."""
    sandbox = tempfile.mkdtemp(prefix="akg-precompile-", dir=root)
    parent = os.getpid()
    try:
        pid = os.fork()
    except OSError:
        shutil.rmtree(sandbox, ignore_errors=True)
        for name in (READY, ENDED):  # the candidate's child must not wait for it
            write_mark(candidate_sandbox, name)
        return None
    if pid == 0:
        try:
            from ascend_kernel_gym.evaluation.child_stream import die_with_parent, name_process

            die_with_parent(parent)
            name_process("akg-precompile")
            for fd in close_fds:
                try:
                    os.close(fd)
                except OSError:
                    pass
            setup = ChildSetup(
                sandbox, job.backend, warm_cache, torch_threads, os_sandbox=True, keep_fds=(), devices=False
            )
            precompile_entry(setup, job, target, job.profile)
        finally:
            os._exit(70)
    try:
        os.setpgid(pid, pid)
    except OSError:
        pass
    return PrecompileRun(pid, sandbox, candidate_sandbox, min(until, time.perf_counter() + PRECOMPILE_MAX_S))


def lower_priority() -> str:
    """Run this process only on CPU time nobody else wants (``SCHED_IDLE``; else nice 19): a
    neighbour that times must not wait for a core. Returns the class it got."""
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        return "idle"
    except (AttributeError, OSError):
        os.nice(NICE)
        return "nice"


def device_reachable(patterns: tuple[str, ...] = CUDA_DEVICES) -> bool:
    """Whether this process can open any device node matching ``patterns`` (it must not)."""
    for pattern in patterns:
        for path in glob.glob(pattern):
            try:
                fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
            except OSError:
                continue
            os.close(fd)
            return True
    return False


class CompileOnlyDriver:
    """A Triton driver that knows the device's compile target and nothing else.

    What the JIT asks before compiling (the target, a device index, a stream) it answers; the
    benchmarker that ``@triton.autotune`` uses runs each configuration once (so each compiles)
    and calls them all equal. Anything else fails, which ends that launch only.
    """

    def __init__(self, target: Any) -> None:
        self._target = target

    def is_active(self) -> bool:
        return True

    def get_current_target(self) -> Any:
        return self._target

    def get_current_device(self) -> int:
        return 0

    def set_current_device(self, device: int) -> None:
        return None

    def get_current_stream(self, device: int | None = None) -> int:
        return 0

    def get_active_torch_device(self) -> torch.device:
        return torch.device("cpu")

    def get_benchmarker(self) -> Callable[..., Any]:
        def bench_once(kernel_call: Callable[[], Any], quantiles: Any = None, **_: Any) -> Any:
            kernel_call()
            return [1.0] * len(quantiles) if quantiles else 1.0

        return bench_once

    def get_empty_cache_for_benchmark(self) -> torch.Tensor:
        return torch.empty(1)

    def clear_cache(self, cache: Any) -> None:
        return None


def install_compile_only(target: dict[str, Any]) -> None:
    """Make Triton in this process compile for ``target`` (``backend``, ``arch``, ``warp_size``)
    and never launch: every ``kernel[grid](...)`` compiles (or finds its cache entry) and returns."""
    import triton.runtime.jit as jit
    from triton.backends.compiler import GPUTarget
    from triton.runtime import driver

    driver.set_active(CompileOnlyDriver(GPUTarget(str(target["backend"]), target["arch"], int(target["warp_size"]))))
    original = jit.JITFunction.run

    def compile_only(self: Any, *args: Any, **kwargs: Any) -> Any:
        kwargs["warmup"] = True
        try:
            return original(self, *args, **kwargs)
        except Exception:  # noqa: BLE001 - e.g. a launch hook this driver cannot serve: the rest goes on
            return None

    jit.JITFunction.run = compile_only  # type: ignore[method-assign]


def precompile(job: Job, profile: str, scratch: str) -> int:
    """Compile what the candidate launches on the main case, mark it, then on each shape case."""
    from ascend_kernel_gym.evaluation.compile_stage import CANDIDATE_FILENAME, import_candidate
    from ascend_kernel_gym.evaluation.guard import SandboxGuard
    from ascend_kernel_gym.evaluation.shape_trials import extra_cases
    from ascend_kernel_gym.evaluation.snapshot import settle_lazy_imports
    from ascend_kernel_gym.evaluation.warmup import run_jit_warmup
    from ascend_kernel_gym.tasks.runtime import instantiate

    cases: list[Any] = [None]
    try:
        cases += extra_cases(job, profile)
        main_module = instantiate(job.task, profile)
    except Exception:  # noqa: BLE001 - the candidate's child reports a broken task
        return EXIT_SETUP
    candidate_file = os.path.join(scratch, CANDIDATE_FILENAME)
    with open(candidate_file, "w", encoding="utf-8") as handle:
        handle.write(job.code)

    def on_violation(message: str) -> NoReturn:
        os._exit(EXIT_GUARD)  # the candidate's child meets the same guard and reports it

    settle_lazy_imports()  # as in the candidate's child: the guard refuses what they would write
    try:
        run_jit_warmup("cpu")  # the JIT's lazy imports, before the guard (the candidate's child does the same)
    except Exception:  # noqa: BLE001 - a Triton this cannot drive: nothing to compile ahead
        return EXIT_SETUP
    guard = SandboxGuard(
        sandbox_dir=scratch,
        candidate_file=candidate_file,
        backend=job.backend,
        on_violation=on_violation,
        library_dirs=library_dirs(job.backend),
    )
    guard.install()
    try:
        model_cls = import_candidate(job.code, candidate_file).__dict__.get("ModelNew")
    except Exception:  # noqa: BLE001 - the candidate's child reports it
        return EXIT_DONE
    if not isinstance(model_cls, type):
        return EXIT_DONE
    for case in cases:
        try:
            task_module = main_module if case is None else instantiate(job.task, profile, case)
            call_once(model_cls, task_module)
        except Exception:  # noqa: BLE001, S110 - candidate code: what compiled so far is kept
            pass
        if case is None:
            _touch(os.path.join(scratch, MAIN_DONE))
    return EXIT_DONE


def call_once(model_cls: type, task_module: Any) -> None:
    """``ModelNew(*init_inputs)(*inputs)`` on the CPU with constant fills for random draws."""
    with ConstantDraws():
        init_inputs = list(task_module.get_init_inputs())
        model = model_cls(*init_inputs)
        inputs = list(task_module.get_inputs())
    with torch.no_grad():
        model(*inputs)


def _touch(path: str) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(f"{time.time():.3f}\n")


#: random operators drawn in place: the value they fill with (None: the lower bound they are given)
_IN_PLACE = {
    "aten::uniform_": None,
    "aten::random_": None,
    "aten::normal_": None,
    "aten::bernoulli_": 0.0,
    "aten::exponential_": 1.0,
    "aten::log_normal_": 1.0,
    "aten::geometric_": 1.0,
    "aten::cauchy_": 0.0,
}
#: random operators that return a new tensor
_FACTORIES = frozenset(
    {
        "aten::randn",
        "aten::rand",
        "aten::randint",
        "aten::randn_like",
        "aten::rand_like",
        "aten::randint_like",
        "aten::randperm",
        "aten::normal",
        "aten::bernoulli",
        "aten::poisson",
    }
)


class ConstantDraws(TorchDispatchMode):
    """Random draws become constant fills of the same shape and dtype (in-place draws fill with
    their lower bound or mean, ``randint`` with its low end, ``randperm`` is ``arange``)."""

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        name = func._schema.name
        if name in _IN_PLACE and args and isinstance(args[0], torch.Tensor):
            fill = _IN_PLACE[name]
            if fill is None:
                fill = args[1] if len(args) > 1 and isinstance(args[1], (int, float)) else 0
            with torch.no_grad():
                return args[0].fill_(fill)
        if name not in _FACTORIES:
            return func(*args, **kwargs)
        if name == "aten::randperm":
            return torch.arange(int(args[0]), dtype=kwargs.get("dtype") or torch.int64, device=kwargs.get("device"))
        shaped = next((arg for arg in args if isinstance(arg, torch.Tensor)), None)
        if shaped is not None:  # randn_like(x), bernoulli(p), normal(mean_tensor, std)
            out = torch.zeros_like(shaped, dtype=kwargs.get("dtype"))
        else:
            meta = func(*args, **{**kwargs, "device": "meta"})
            out = torch.zeros(meta.shape, dtype=meta.dtype, device=kwargs.get("device"))
        if name == "aten::randint" and len(args) >= 3 and isinstance(args[0], int):
            out.fill_(args[0])  # randint(low, high, size)
        return out
