"""A stand-in evaluator that judges by comparing the code with the task's reference solution.

Used by the agents tests (the ``fake_evaluator`` fixture) and the kernel-choice wrapper tests,
which need the correct / broken / hacky answers told apart instantly.
"""

from __future__ import annotations

from typing import Any

from ascend_kernel_gym.evaluation.result import ErrorType, EvalResult, Stage


class FakeEvaluator:
    """Scores by looking at the code, without running it: the reference solution is correct,
    ``class ModelNew(Model)`` is a hack, anything else fails at run time. Counts its calls."""

    backend = "interpreter"
    evaluator_id = "fake-evaluator"

    def __init__(self) -> None:
        self.calls = 0

    def evaluate(self, request: Any) -> EvalResult:
        self.calls += 1
        code = request.code
        result = EvalResult(
            task_id=request.task.id,
            backend="interpreter",
            profile="small",
            code_hash=str(hash(code)),
            format_ok=True,
            static_ok=True,
        )
        solution = (request.task.solution_source() or "").strip()
        if "class ModelNew(Model)" in code:
            result.stage, result.compiled, result.correct, result.hack = Stage.CORRECTNESS, True, True, True
            result.error_type = ErrorType.TORCH_FALLBACK
        elif code.strip() == solution:
            result.stage, result.compiled, result.correct = Stage.DONE, True, True
        else:
            result.stage, result.error_type = Stage.COMPILE, ErrorType.RUNTIME_ERROR
        return result
