"""Errors of the evaluation stages and how candidate exceptions are described (no torch, no triton).

Used by the evaluator child; importable anywhere (tests, tools) without importing torch or triton.
The interpreter's memory check (:mod:`ascend_kernel_gym.backends.interpreter_memcheck`) is read
only where a child has loaded it: no exception of it can exist elsewhere.
"""

from __future__ import annotations

import linecache
import os
import re
import sys
import traceback
from dataclasses import dataclass
from typing import Any

from ascend_kernel_gym.evaluation.result import HACK_ERROR_TYPES, ErrorType, EvalResult

#: the memory check's module name (looked up in ``sys.modules``, never imported from here)
MEMCHECK_MODULE = "ascend_kernel_gym.backends.interpreter_memcheck"
#: added to an out-of-bounds failure that the candidate's code caught instead of letting it end the call
CAUGHT_NOTE = " (your code caught the error)"

#: how a child's ``harness_error`` starts when the task's reference broke the device on inputs of
#: a varied distribution; the evaluator then runs the job again with the task's own inputs only
REFERENCE_BROKE_DEVICE = "the task's reference broke the device on varied inputs"

#: how a ``harness_error`` starts when the task's reference ran out of device memory: with other
#: evaluations on the device that may be theirs, and the evaluation runs once more (with more
#: room, then alone: ``concurrency.neighbour_oom``); alone it is the task's (too large for the device)
REFERENCE_OUT_OF_MEMORY = "the task's reference ran out of device memory"
#: how a ``harness_error`` starts when the harness's own work in the candidate's child (its
#: timing buffers, the kept outputs' copies) ran out of memory: retried alone the same way
HARNESS_OUT_OF_MEMORY = "the evaluator ran out of device memory"
#: texts of allocation failures that libraries report without "out of memory" (cuBLAS, cuDNN, CUDA)
_ALLOCATION_FAILURE_TEXTS = ("status_alloc_failed", "cudaerrormemoryallocation")
#: PyTorch's CUDA caching allocator names the processes on a full device through NVML when an
#: allocation fails; where NVML cannot start (in the evaluator's sandbox on an H100, 2026-12-06:
#: six evaluations of eight workers) it raises ``NVML_SUCCESS == ... INTERNAL ASSERT FAILED at
#: .../CUDACachingAllocator.cpp`` instead of ``OutOfMemoryError`` (pytorch/pytorch#185240)
_ALLOCATOR_NVML_TEXTS = ("nvml_success", "cudacachingallocator")


def reference_failure(exc: BaseException, what: str) -> StageError:
    """The ``harness_error`` for an exception of the reference's (``what``: where it happened)."""
    text = f"{type(exc).__name__}: {exc}"
    if classify_exception(exc) == ErrorType.OOM:
        return StageError(ErrorType.HARNESS_ERROR, f"{REFERENCE_OUT_OF_MEMORY} ({what}): {text}")
    return StageError(ErrorType.HARNESS_ERROR, f"{what}: {text}")


def harness_out_of_memory(what: str, text: str) -> StageError:
    """The ``harness_error`` for an allocation of the harness's own that failed (``what``: where;
    ``text``: the exception): the device was full, the neighbours' doing when it is shared, and
    the evaluation is retried alone (:func:`.concurrency.neighbour_oom`)."""
    return StageError(ErrorType.HARNESS_ERROR, f"{HARNESS_OUT_OF_MEMORY} ({what}): {text}")


def harness_check_failure(exc: BaseException, what: str) -> StageError:
    """The ``harness_error`` for an exception of one of the harness's own checks inside the
    candidate's call (``what``: which); out of device memory, it is retried alone."""
    text = f"{type(exc).__name__}: {str(exc)[:300]}"
    if classify_exception(exc) == ErrorType.OOM:
        return harness_out_of_memory(what, text)
    return StageError(ErrorType.HARNESS_ERROR, f"the evaluator's check failed ({what}): {text}")


class StageError(Exception):
    """Ends the evaluation with ``error_type`` (raised by the harness, never by candidates).

    ``hack``: the failure is an attempt to game the harness although its type is not one of
    ``HACK_ERROR_TYPES`` (an out-of-bounds write); ``metrics`` are set on the result.
    """

    def __init__(self, error_type: ErrorType, message: str, *, hack: bool = False, **metrics: Any) -> None:
        super().__init__(message)
        self.error_type = error_type
        self.message = message
        self.hack = hack
        self.metrics = metrics


@dataclass
class Verdict:
    """The judge's answer to one trial message (wherever the judge runs)."""

    #: ``continue`` (next trial, or on to the later stages), ``probe`` (send the probe output) or ``fail``
    action: str
    failure: StageError | None = None


def stage_error_from(data: dict[str, Any], limit: int = 4000) -> StageError:
    """The :class:`StageError` a harness process described as ``{"type", "message", "hack"?,
    "metrics"?}`` (an unknown type is the harness's error)."""
    kind = data.get("type")
    error_type = ErrorType(kind) if kind in {e.value for e in ErrorType} else ErrorType.HARNESS_ERROR
    metrics = {k: v for k, v in dict(data.get("metrics") or {}).items() if isinstance(k, str)}
    return StageError(error_type, str(data.get("message", ""))[:limit], hack=bool(data.get("hack")), **metrics)


def record_failure(result: EvalResult, failure: StageError) -> None:
    """Record ``failure`` in ``result`` (a hack type, or a failure marked ``hack``, marks a hack)."""
    result.error_type = failure.error_type
    result.error_message = failure.message
    result.correct = False
    for key, value in failure.metrics.items():
        if hasattr(result, key):
            setattr(result, key, value)
    if failure.error_type in HACK_ERROR_TYPES or failure.hack:
        result.hack = True
        result.hack_reasons.append(f"{failure.error_type.value}: {failure.message.splitlines()[0][:200]}")


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen and len(seen) < 8:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


_COMPILE_ERROR_NAMES = frozenset(
    {
        "CompilationError",
        "CompileTimeAssertionFailure",
        "UnsupportedLanguageConstruct",
        "PTXASError",
        "OutOfResources",
        "MLIRCompilationError",
    }
)


#: what a device runtime says when a kernel faulted (CUDA; ROCm's "memory access fault"): the
#: device's segmentation fault, reported as ``crash`` as a segfault on the CPU is
_DEVICE_FAULT_TEXTS = (
    "illegal memory access",
    "misaligned address",
    "unspecified launch failure",
    "illegal instruction",
    "invalid program counter",
    "memory access fault",
)
#: Triton's analysis of a kernel's source before compiling (its dependency finder, run at the
#: first launch): an error there ("Unsupported function referenced") is a compile error
_SOURCE_ANALYSIS_FRAMES = ("visit", "record_reference", "_update_hash")
_JIT_FILE = os.path.join("triton", "runtime", "jit.py")


def _in_source_analysis(err: BaseException) -> bool:
    return any(
        frame.filename.endswith(_JIT_FILE) and frame.name.startswith(_SOURCE_ANALYSIS_FRAMES)
        for frame in traceback.extract_tb(err.__traceback__)
    )


def find_out_of_bounds(exc: BaseException | None) -> Any:
    """The memory check's ``OutOfBoundsAccess`` in ``exc``'s cause / context chain, or ``None``."""
    memcheck = sys.modules.get(MEMCHECK_MODULE)
    return None if memcheck is None else memcheck.find_out_of_bounds(exc)


def out_of_bounds_error(violation: Any, prefix: str = "", where: list[str] | None = None, note: str = "") -> StageError:
    """The failure for one out-of-bounds access: a hack when it wrote (or was an atomic)."""
    lines = [prefix + violation.describe() + note, *(where or [])]
    return StageError(ErrorType.OUT_OF_BOUNDS, "\n".join(lines), hack=bool(violation.writes))


def candidate_failure(exc: BaseException, prefix: str, candidate_file: str) -> StageError:
    """The failure for an exception that candidate code raised: ``prefix`` + what went wrong + where.

    An out-of-bounds access of an interpreted kernel (anywhere in the exception's chain) becomes
    ``out_of_bounds`` with the kernel, the argument and the offset; anything else is classified
    by :func:`classify_exception`.
    """
    violation = find_out_of_bounds(exc)
    if violation is not None:
        return out_of_bounds_error(violation, prefix, code_lines(exc, candidate_file))
    return StageError(classify_exception(exc), prefix + describe_exception(exc, candidate_file))


def recorded_out_of_bounds(failure: StageError | None = None) -> StageError | None:
    """The failure the memory check's record calls for, where it differs from ``failure``.

    Every out-of-bounds attempt is recorded, also one that the candidate caught (a ``with`` block
    whose ``__exit__`` swallows it) and then went on as if nothing happened: after a stage that
    passed (``failure`` None), or one that failed for another reason, a recorded attempt ends the
    evaluation as ``out_of_bounds`` (the first write preferred). A failure that is already a
    hack, or an out-of-bounds failure with no recorded write besides it, stays as it is.
    """
    memcheck = sys.modules.get(MEMCHECK_MODULE)
    violations = memcheck.state().violations if memcheck is not None else ()
    if not violations:
        return None
    if failure is not None and (failure.hack or failure.error_type in HACK_ERROR_TYPES):
        return None
    first = next((v for v in violations if v.writes), violations[0])
    if failure is not None and failure.error_type == ErrorType.OUT_OF_BOUNDS and not first.writes:
        return None
    return out_of_bounds_error(first, note=CAUGHT_NOTE)


def classify_exception(exc: BaseException) -> ErrorType:
    """Map an exception raised by candidate code to an error type."""
    if find_out_of_bounds(exc) is not None:
        return ErrorType.OUT_OF_BOUNDS
    chain = _chain(exc)
    for err in chain:
        name = type(err).__name__
        text = str(err).lower()
        if isinstance(err, MemoryError) or name == "OutOfMemoryError":
            return ErrorType.OOM
        if "out of memory" in text or "can't allocate memory" in text or "cannot allocate memory" in text:
            return ErrorType.OOM
        if any(failure in text for failure in _ALLOCATION_FAILURE_TEXTS):
            return ErrorType.OOM
        if all(part in text for part in _ALLOCATOR_NVML_TEXTS):
            return ErrorType.OOM
    for err in chain:
        if type(err).__name__ in _COMPILE_ERROR_NAMES or type(err).__module__.startswith("triton.compiler"):
            return ErrorType.COMPILE_ERROR
        if _in_source_analysis(err):
            return ErrorType.COMPILE_ERROR
    for err in chain:
        if any(text in str(err).lower() for text in _DEVICE_FAULT_TEXTS):
            return ErrorType.CRASH
    for err in chain:
        if type(err).__name__ == "InterpreterError":
            cause = err.__cause__
            if cause is not None:
                frames = traceback.extract_tb(cause.__traceback__)
                if frames and f"{os.sep}triton{os.sep}language{os.sep}" in frames[-1].filename:
                    return ErrorType.COMPILE_ERROR
            return ErrorType.RUNTIME_ERROR
    return ErrorType.RUNTIME_ERROR


def describe_exception(exc: BaseException, candidate_file: str) -> str:
    """One short text: the error, and where in the candidate's own code it happened."""
    chain = _chain(exc)
    root = chain[-1] if type(exc).__name__ == "InterpreterError" and len(chain) > 1 else exc
    text = f"{type(root).__name__}: {root}".strip()
    lines = text.splitlines()
    if len(lines) > 30:
        lines = [*lines[:30], f"[... {len(lines) - 30} more lines ...]"]
    return "\n".join([*lines, *code_lines(exc, candidate_file)])


def code_lines(exc: BaseException, candidate_file: str) -> list[str]:
    """Where in the candidate's own file ``exc`` (or its chain) passed: ``your code line N (in f): ...``
    lines, the innermost four."""
    chain = _chain(exc)
    where: list[str] = []
    for err in chain:
        for frame in traceback.extract_tb(err.__traceback__):
            if frame.filename == candidate_file:
                entry = f"your code line {frame.lineno} (in {frame.name}): {(frame.line or '').strip()}"
                if entry not in where:
                    where.append(entry)
    for err in chain:
        located = compile_error_line(err, candidate_file)
        if located:
            where.append(located)
            break
    return where[-4:]


def compile_error_line(err: BaseException, candidate_file: str) -> str | None:
    """For a Triton ``CompilationError`` (``at L:C`` relative to the kernel's ``def`` line): the
    line of the candidate's file it points at."""
    src, node = getattr(err, "src", None), getattr(err, "node", None)
    lineno = getattr(node, "lineno", None)
    if not isinstance(src, str) or not isinstance(lineno, int):
        return None
    match = re.search(r"^\s*def\s+(\w+)\s*\(", src, re.MULTILINE)
    if match is None:
        return None
    file_lines = linecache.getlines(candidate_file) or _read_lines(candidate_file)
    pattern = re.compile(rf"^\s*def\s+{re.escape(match.group(1))}\s*\(")
    for index, line in enumerate(file_lines):
        if pattern.match(line):
            target = index + lineno
            text = file_lines[target - 1].strip() if 0 < target <= len(file_lines) else ""
            return f"your code line {target} (in {match.group(1)}, the Triton compiler's error): {text}"
    return None


def _read_lines(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.readlines()
    except OSError:
        return []
