"""The compile stage: the task and its reference, the harness's guards, the candidate imported and built.

Before any candidate code runs, the child loads the task, builds the reference model and runs
it twice on the task's own inputs (a reference that fails or is random is the task's problem,
reported as ``harness_error``), installs the launch / operator recorder, takes the library
snapshot and installs the sandbox guard. Then it imports the candidate's module from
``kernel.py`` in its sandbox, constructs ``ModelNew`` with the task's init inputs and gives it
the reference's parameters and buffers. The first call of the candidate is the first trial of
the correctness stage (it completes compiling: Triton compiles at the first launch).

Imports torch: only the zygote and its children import this module.
"""

from __future__ import annotations

import os
import random
import sys
import time
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

import torch

from ascend_kernel_gym.evaluation.errors import StageError, candidate_failure
from ascend_kernel_gym.evaluation.guard import SandboxGuard
from ascend_kernel_gym.evaluation.inputs import device_redirect
from ascend_kernel_gym.evaluation.livecheck import check_live_paths
from ascend_kernel_gym.evaluation.precompile_run import READY, wait_for_mark
from ascend_kernel_gym.evaluation.process import library_dirs
from ascend_kernel_gym.evaluation.recorder import Recorder, moves_data_only
from ascend_kernel_gym.evaluation.reference_model import ReferenceSlack, init_seed_of, load_reference
from ascend_kernel_gym.evaluation.result import ErrorType
from ascend_kernel_gym.evaluation.snapshot import LibrarySnapshot, check_snapshot, settle_lazy_imports
from ascend_kernel_gym.evaluation.state import ChildState, PartTimer, apply_failure
from ascend_kernel_gym.evaluation.tensors import module_buffer

CANDIDATE_MODULE = "akg_candidate"
CANDIDATE_FILENAME = "kernel.py"


@dataclass
class Compiled:
    """What the compile stage hands to the later stages."""

    #: the task's module (``Model``, ``get_inputs``, ``get_init_inputs``) at the evaluated profile
    task_module: Any
    reference: Any
    candidate: Any
    #: the hidden random source of this evaluation (input seeds, distributions, timing rounds)
    rng: random.Random
    #: taken before any candidate code ran (also ``state.snapshot``)
    snapshot: LibrarySnapshot


def run_compile(state: ChildState, device: torch.device, mark: PartTimer) -> Compiled:
    """Run the compile stage up to a constructed candidate; raises :class:`StageError` on failure.

    ``mark`` records the stage's parts (``compile.task``, ``compile.reference_check``, ...).
    """
    job, result = state.job, state.result
    candidate_file = os.path.join(state.sandbox, CANDIDATE_FILENAME)
    state.candidate_file = candidate_file
    with open(candidate_file, "w", encoding="utf-8") as handle:
        handle.write(job.code)
    mark("task")
    recorder = Recorder(CANDIDATE_MODULE, candidate_file=candidate_file)
    recorder.install()
    state.recorder = recorder
    rng = random.Random(job.seed if job.seed is not None else int.from_bytes(os.urandom(8), "little"))
    init_seed = init_seed_of(rng)

    state.redirect = device_redirect(device)
    # The reference is built (and checked) before any candidate code runs, so a failure here is ours.
    loaded = load_reference(job, init_seed, device)
    task_module, init_inputs, reference = loaded.task_module, loaded.init_inputs, loaded.reference
    state.slack = ReferenceSlack(reference, device)
    recorder.moving_task = moves_data_only(loaded.ops)
    result.profile = loaded.profile
    result.warnings.extend(loaded.warnings)
    mark("reference_check")
    check_live_paths(job.paths, job.escaping)
    if job.backend == "interpreter":
        _patch_autotune_for_interpreter()
    settle_lazy_imports()
    mark("settle")
    snapshot = LibrarySnapshot()
    state.snapshot = snapshot
    mark("snapshot")

    def on_violation(message: str) -> NoReturn:
        apply_failure(state, StageError(ErrorType.SANDBOX_VIOLATION, f"sandbox: your code {message}"))
        state.finish()

    if job.precompile_wait_s > 0:  # its kernels are being compiled ahead, outside the device's pauses
        wait_for_mark(state.sandbox, READY, job.precompile_wait_s)
        mark("precompile_wait")
    guard = SandboxGuard(
        sandbox_dir=state.sandbox,
        candidate_file=candidate_file,
        backend=job.backend,
        on_violation=on_violation,
        library_dirs=library_dirs(job.backend),
    )
    guard.install()
    mark("guard")

    # The candidate: import and construct (its first call is the first correctness trial).
    module = import_candidate(job.code, candidate_file)
    check_snapshot(snapshot)
    mark("import")
    model_cls = module.__dict__.get("ModelNew")
    if not isinstance(model_cls, type):
        raise StageError(ErrorType.MISSING_MODEL_NEW, "ModelNew is not a class after your module ran")
    state.model_cls, state.init_seed = model_cls, init_seed
    candidate = construct_candidate(state, init_inputs, reference, device)
    check_snapshot(snapshot)
    mark("construct")
    return Compiled(task_module, reference, candidate, rng, snapshot)


def construct_candidate(
    state: ChildState, init_inputs: list[Any], reference: Any, device: torch.device, where: str = ""
) -> Any:
    """``ModelNew(*init_inputs)`` seeded like the reference, on ``device``, with the reference's
    parameters and buffers; raises :class:`StageError`. ``where``: the shape case, for messages."""
    try:
        torch.manual_seed(state.init_seed + 1)
        with device, device_redirect(device):
            candidate = state.model_cls(*_copy_args(init_inputs))
        if isinstance(candidate, torch.nn.Module):
            candidate = torch.nn.Module.to(candidate, device)
    except BaseException as exc:  # noqa: BLE001 - candidate code
        raise candidate_failure(exc, f"ModelNew(...){where} failed: ", state.candidate_file) from None
    if not callable(candidate):
        raise StageError(ErrorType.RUNTIME_ERROR, "ModelNew instances are not callable (subclass nn.Module)")
    try:
        _copy_parameters(reference, candidate)
    except Exception as exc:  # noqa: BLE001 - the candidate's parameters or buffers (e.g. an UninitializedParameter)
        raise StageError(
            ErrorType.RUNTIME_ERROR,
            "the reference's parameters could not be given to ModelNew: reading ModelNew's parameters and buffers "
            f"failed ({type(exc).__name__}: {str(exc)[:200]}); register plain, initialised nn.Parameter / tensor "
            "attributes",
        ) from None
    return candidate


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


def _copy_args(values: list[Any]) -> list[Any]:
    return [v.clone() if isinstance(v, torch.Tensor) else v for v in values]


def import_candidate(code: str, filename: str) -> types.ModuleType:
    """Run the candidate's ``code`` as the module :data:`CANDIDATE_MODULE` (file ``filename``);
    raises :class:`StageError` (``compile_error`` when the module does not load)."""
    module = types.ModuleType(CANDIDATE_MODULE)
    module.__file__ = filename
    sys.modules[CANDIDATE_MODULE] = module
    try:
        # dont_inherit: this module's `from __future__ import annotations` must not turn the
        # candidate's annotations into strings that some library evaluates later, unchecked
        compiled = compile(code, filename, "exec", dont_inherit=True)
        exec(compiled, module.__dict__)
    except BaseException as exc:  # noqa: BLE001 - candidate code
        failure = candidate_failure(exc, "importing your code failed: ", filename)
        if failure.error_type == ErrorType.RUNTIME_ERROR:
            failure.error_type = ErrorType.COMPILE_ERROR  # the module does not load
        raise failure from None
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
        target = module_buffer(candidate, name)
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
