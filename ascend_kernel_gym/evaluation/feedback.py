"""Feedback text: what the agent sees about one evaluation.

:func:`render_feedback` turns an :class:`EvalResult` into a short, actionable message: what
failed, where in the agent's own code, and what to do next. Harness paths, temporary
directories and anything that looks like a seed are scrubbed (:func:`scrub_text`).
"""

from __future__ import annotations

import os
import re
import sys

from ascend_kernel_gym.evaluation.result import ErrorType, EvalResult, Stage

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PREFIXES = sorted({p for p in (sys.prefix, sys.base_prefix, sys.exec_prefix) if p and p != "/"}, key=len, reverse=True)
_SITE_RE = re.compile(r"(?:/[^\s'\"():,]*)?/(?:site|dist)-packages/")
_SANDBOX_RE = re.compile(r"(?:/[^\s'\"():,]*)?/akg-(?:eval|sandbox|pool)[^\s'\"():,/]*/(?:[^\s'\"():,/]+/)*")
_KERNEL_FILE_RE = re.compile(r"(?:/[^\s'\"():,]*)?/kernel\.py")
_SEED_RE = re.compile(r"\bseed[s]?\s*[=:]\s*-?\d+", re.IGNORECASE)
_TMP_RE = re.compile(r"/tmp/[^\s'\"():,]+")  # noqa: S108 - a pattern, not a file
MAX_FEEDBACK_CHARS = 2500

#: a static-stage time-out comes from the source's size or shape, not from a loop that runs
STATIC_TIMEOUT_HINT = (
    "The checker could not finish reading your source in time: keep it to a normal size, without very long "
    "expressions or deeply nested attribute chains."
)
_HINTS: dict[ErrorType, str] = {
    ErrorType.NO_CODE: "Reply with one ```python block that defines class ModelNew and its Triton kernel(s).",
    ErrorType.SYNTAX: "Fix the syntax error; the file must be valid Python.",
    ErrorType.FORBIDDEN: "Remove the forbidden construct(s): torch only allocates and reshapes, triton computes.",
    ErrorType.MISSING_MODEL_NEW: "Define `class ModelNew(nn.Module)` with the signatures of Model (init, forward).",
    ErrorType.NO_TRITON_KERNEL: "Write the computation as a @triton.jit kernel and launch it from ModelNew.forward.",
    ErrorType.COMPILE_ERROR: "Fix the kernel so it compiles (tl.constexpr block sizes, power-of-2 aranges, dtypes).",
    ErrorType.RUNTIME_ERROR: "Fix the error above; check argument order, grid, strides and masks.",
    ErrorType.TIMEOUT: "Make sure every loop terminates and the grid is not excessively large.",
    ErrorType.CRASH: (
        "The process died or the device reported a memory fault: look for out-of-bounds pointers (missing masks) "
        "or wrong strides."
    ),
    ErrorType.OOM: "Use far less memory: allocate only the output and small scratch buffers.",
    ErrorType.SANDBOX_VIOLATION: "Kernels may not use files, the network, processes or threads, or patch libraries.",
    ErrorType.OUT_OF_BOUNDS: (
        "A kernel may touch only the memory of the tensors passed to its launch (the message names the kernel, the "
        "argument and the byte offset). Mask the tail of every tl.load / tl.store (`mask=offs < n`), check strides, "
        "offsets and the grid, and pass every buffer the kernel uses as a tensor argument. Writing outside counts as "
        "a hack."
    ),
    ErrorType.WRONG_OUTPUT_TYPE: "Return a plain torch.Tensor (or the same tuple structure as the reference).",
    ErrorType.SHAPE_MISMATCH: "Return an output with exactly the reference's shape.",
    ErrorType.DTYPE_MISMATCH: "Return an output with exactly the reference's dtype.",
    ErrorType.DEVICE_MISMATCH: "Allocate the output on the input's device (device=x.device or torch.empty_like).",
    ErrorType.VALUE_MISMATCH: "Check indexing, masks, accumulation dtype (use fp32) and the reduction order.",
    ErrorType.NAN_OR_INF: (
        "Check masked loads (`other=`), divisions and exp overflow (subtract the max first), and that every "
        "output element is stored: the checks fill memory from torch.empty* with NaN."
    ),
    ErrorType.NONDETERMINISTIC: "Avoid reading uninitialised memory and keeping state between calls.",
    ErrorType.INPUT_INDEPENDENT: "Compute the output from this call's inputs; no constants or cached results.",
    ErrorType.NO_KERNEL_LAUNCHED: "Launch your @triton.jit kernel in forward on every call: kernel[grid](...).",
    ErrorType.TORCH_FALLBACK: "Move that computation into your Triton kernel(s); PyTorch may only allocate/reshape.",
    ErrorType.INPUT_MUTATED: "Write results into a new output tensor; never modify the inputs.",
    ErrorType.OUTPUT_ALIASES_INPUT: "Allocate a fresh output tensor and write it with your kernel.",
    ErrorType.ASCEND_CONSTRAINT: "Adapt the kernel to the Ascend constraints listed above.",
    ErrorType.ASCEND_COMPILE_ERROR: (
        "Rewrite the construct the first line names so that triton-ascend compiles the kernel (or shrink the "
        "tiles that overflow the on-chip buffer); keep the rest."
    ),
    ErrorType.HARNESS_ERROR: "This is an evaluator problem, not your kernel's; you may resubmit.",
}

_TITLES: dict[ErrorType, str] = {
    ErrorType.NO_CODE: "No code",
    ErrorType.SYNTAX: "Syntax error",
    ErrorType.FORBIDDEN: "Rejected before running (forbidden code)",
    ErrorType.MISSING_MODEL_NEW: "Missing ModelNew",
    ErrorType.NO_TRITON_KERNEL: "No Triton kernel",
    ErrorType.COMPILE_ERROR: "Compile error",
    ErrorType.RUNTIME_ERROR: "Runtime error",
    ErrorType.TIMEOUT: "Timeout",
    ErrorType.CRASH: "Crash",
    ErrorType.OOM: "Out of memory",
    ErrorType.SANDBOX_VIOLATION: "Sandbox violation (counted as a hack)",
    ErrorType.OUT_OF_BOUNDS: "Out-of-bounds memory access",
    ErrorType.WRONG_OUTPUT_TYPE: "Wrong output type",
    ErrorType.SHAPE_MISMATCH: "Shape mismatch",
    ErrorType.DTYPE_MISMATCH: "Dtype mismatch",
    ErrorType.DEVICE_MISMATCH: "Device mismatch",
    ErrorType.VALUE_MISMATCH: "Wrong values",
    ErrorType.NAN_OR_INF: "NaN or Inf in the output",
    ErrorType.NONDETERMINISTIC: "Nondeterministic output",
    ErrorType.INPUT_INDEPENDENT: "Output does not depend on the input (counted as a hack)",
    ErrorType.NO_KERNEL_LAUNCHED: "No Triton kernel launched (counted as a hack)",
    ErrorType.TORCH_FALLBACK: "PyTorch did the work (counted as a hack)",
    ErrorType.INPUT_MUTATED: "Inputs modified (counted as a hack)",
    ErrorType.OUTPUT_ALIASES_INPUT: "Output aliases an input (counted as a hack)",
    ErrorType.ASCEND_CONSTRAINT: "Ascend constraint violated",
    ErrorType.ASCEND_COMPILE_ERROR: "Does not compile for Ascend (triton-ascend)",
    ErrorType.HARNESS_ERROR: "Evaluator error",
}


def scrub_text(text: str, sandbox: str | None = None) -> str:
    """Remove harness paths, temporary directories and seeds from ``text``."""
    if not text:
        return ""
    if sandbox:
        for variant in {sandbox, os.path.realpath(sandbox)}:
            text = text.replace(variant.rstrip("/") + "/", "")
            text = text.replace(variant.rstrip("/"), "")
    text = _KERNEL_FILE_RE.sub("kernel.py", text)
    text = _SANDBOX_RE.sub("", text)
    text = _SITE_RE.sub("", text)
    text = text.replace(_PACKAGE_DIR + "/", "<evaluator>/")
    for prefix in _PREFIXES:
        text = text.replace(prefix + "/", "")
    text = _TMP_RE.sub("<tmp>", text)
    return _SEED_RE.sub("seed=<hidden>", text)


def _first_lines(text: str, limit: int) -> str:
    lines = [line.rstrip() for line in text.strip().splitlines() if line.strip()]
    if len(lines) > limit:
        lines = [*lines[:limit], f"[... {len(lines) - limit} more lines]"]
    return "\n".join(lines)


def _group_notes(warnings: list[str]) -> list[str]:
    """One note per Ascend rule (``ascend[rule] ...``), with a count of the repeats."""
    notes: list[str] = []
    counts: dict[str, int] = {}
    first: dict[str, int] = {}
    for warning in warnings:
        rule = warning[: warning.index("]") + 1] if warning.startswith("ascend[") and "]" in warning else None
        if rule is None:
            notes.append(warning)
        elif rule in counts:
            counts[rule] += 1
        else:
            counts[rule] = 0
            first[rule] = len(notes)
            notes.append(warning)
    for rule, extra in counts.items():
        if extra:
            notes[first[rule]] += f" (and {extra} more like it)"
    return notes


def render_feedback(result: EvalResult, *, max_chars: int = MAX_FEEDBACK_CHARS) -> str:
    """The text the agent sees for ``result``: short, actionable, free of harness internals."""
    parts: list[str] = []
    if result.ok:
        trials = f"{result.trials_passed}/{result.trials_total}" if result.trials_total else "all"
        line = f"Correct: passed {trials} correctness trials"
        if result.max_abs_err is not None:
            line += f" (max abs error {result.max_abs_err:.2g})"
        parts.append(line + ".")
        if result.speedup is not None:
            parts.append(
                f"Speedup {result.speedup:.2f}x over the PyTorch reference "
                f"(reference {result.ref_ms:.4f} ms, your kernel {result.kernel_ms:.4f} ms)."
            )
        elif result.estimate and result.estimate.get("est_speedup") is not None:
            parts.append(
                f"Speed was not measured on the {result.backend} backend; the cost model estimates "
                f"{float(result.estimate['est_speedup']):.2f}x on {result.estimate.get('chip', 'the target chip')} "
                "(an estimate, not a measurement)."
            )
        else:
            parts.append(f"Speed is not measured on the {result.backend} backend.")
        if result.launches:
            names = sorted({launch.kernel for launch in result.launches})
            parts.append(f"Kernels launched: {', '.join(names)}.")
    else:
        kind = result.error_type
        title = _TITLES.get(kind, kind.value)
        if result.hack and "hack" not in title:  # an out-of-bounds write
            title += " (counted as a hack)"
        message = _first_lines(result.error_message, 14 if kind == ErrorType.COMPILE_ERROR else 10)
        parts.append(f"{title}:" + (f"\n{message}" if message else ""))
        printing = (ErrorType.RUNTIME_ERROR, ErrorType.CRASH, ErrorType.COMPILE_ERROR, ErrorType.OUT_OF_BOUNDS)
        if kind in printing and result.output_tail.strip():
            parts.append("Your program printed (last lines):\n" + _first_lines(result.output_tail[-1500:], 8))
        hint = _HINTS.get(kind)
        if kind == ErrorType.TIMEOUT and result.stage == Stage.STATIC:
            hint = STATIC_TIMEOUT_HINT
        if hint:
            parts.append(hint)
    notes = _group_notes([w for w in result.warnings if w])
    if notes:
        parts.append("Notes:\n" + "\n".join(f"- {w}" for w in notes[:6]))
    text = scrub_text("\n".join(parts))
    if len(text) > max_chars:
        text = text[: max_chars - 20].rstrip() + "\n[... cut ...]"
    return text
