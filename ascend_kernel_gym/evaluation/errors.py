"""Errors of the evaluation stages and how candidate exceptions are described (no torch, no triton).

Used by the evaluator child; importable anywhere (tests, tools) without importing torch or triton.
"""

from __future__ import annotations

import linecache
import os
import re
import traceback
from typing import Any

from ascend_kernel_gym.evaluation.result import ErrorType

#: how a child's ``harness_error`` starts when the task's reference broke the device on inputs of
#: a varied distribution; the evaluator then runs the job again with the task's own inputs only
REFERENCE_BROKE_DEVICE = "the task's reference broke the device on varied inputs"


class StageError(Exception):
    """Ends the evaluation with ``error_type`` (raised by the harness, never by candidates)."""

    def __init__(self, error_type: ErrorType, message: str, **metrics: Any) -> None:
        super().__init__(message)
        self.error_type = error_type
        self.message = message
        self.metrics = metrics


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


def classify_exception(exc: BaseException) -> ErrorType:
    """Map an exception raised by candidate code to an error type."""
    chain = _chain(exc)
    for err in chain:
        name = type(err).__name__
        text = str(err).lower()
        if isinstance(err, MemoryError) or name == "OutOfMemoryError":
            return ErrorType.OOM
        if "out of memory" in text or "can't allocate memory" in text or "cannot allocate memory" in text:
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
    out = "\n".join(lines)
    if where:
        out += "\n" + "\n".join(where[-4:])
    return out


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
