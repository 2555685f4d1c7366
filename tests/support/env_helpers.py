"""Shared helpers of the env tests (a unique module name so pytest's rootdir imports cannot clash).

``FakeEvaluator`` answers instantly from markers in the code; it is used only for pure unit
tests of the env's bookkeeping (reward modes, episode end, spaces). Everything the issue lists
under "Checked by" runs against the real evaluator on the interpreter (see test_ascend_triton.py).
"""

from __future__ import annotations

import re
import threading

from ascend_kernel_gym.evaluation.result import ErrorType, EvalRequest, EvalResult, Stage

RELU = "core/L1/relu"


class FakeEvaluator:
    """Markers in the code decide the result: HACK, SLOW, FAST, SPEEDUP=<x>, ModelNew, else compile error."""

    backend = "interpreter"

    def __init__(self) -> None:
        self.requests: list[EvalRequest] = []
        self._lock = threading.Lock()

    def evaluate(self, request: EvalRequest) -> EvalResult:
        with self._lock:
            self.requests.append(request)
        code = request.code
        base = dict(task_id=request.task.id, backend="interpreter", profile=request.profile or "small", code_hash="h")
        if "HACK" in code:
            return EvalResult(
                **base, stage=Stage.CORRECTNESS, format_ok=True, static_ok=True, compiled=True, correct=True,
                hack=True, hack_reasons=["torch fallback"], error_type=ErrorType.TORCH_FALLBACK,
            )  # fmt: skip
        if "ModelNew" not in code:
            return EvalResult(
                **base, stage=Stage.COMPILE, format_ok=True, static_ok=True, error_type=ErrorType.COMPILE_ERROR,
                error_message="boom",
            )  # fmt: skip
        speedup = None
        match = re.search(r"SPEEDUP=([0-9.]+)", code)
        if match:
            speedup = float(match.group(1))
        return EvalResult(
            **base, stage=Stage.DONE, format_ok=True, static_ok=True, compiled=True, correct=True, speedup=speedup,
        )  # fmt: skip


def fenced(code: str, tag: str = "python") -> str:
    return f"Here is my kernel.\n```{tag}\n{code}\n```\n"
