"""The sandboxed, cascaded evaluator: static -> compile -> correctness -> performance.

Importing this package is light (no torch, no triton): candidate code only ever runs in
evaluator children.

    from ascend_kernel_gym.evaluation import Evaluator, EvalRequest, render_feedback
    with Evaluator(backend="interpreter", workers=2) as ev:
        result = ev.evaluate(EvalRequest(task=task, code=code))
    print(render_feedback(result))
"""

from ascend_kernel_gym.evaluation.evaluator import Evaluator, close_shared_evaluators, get_shared_evaluator
from ascend_kernel_gym.evaluation.feedback import render_feedback, scrub_text
from ascend_kernel_gym.evaluation.result import (
    HACK_ERROR_TYPES,
    ErrorType,
    EvalRequest,
    EvalResult,
    LaunchRecord,
    Stage,
)
from ascend_kernel_gym.evaluation.static import StaticReport, check_source

__all__ = [
    "HACK_ERROR_TYPES",
    "ErrorType",
    "EvalRequest",
    "EvalResult",
    "Evaluator",
    "LaunchRecord",
    "Stage",
    "StaticReport",
    "check_source",
    "close_shared_evaluators",
    "get_shared_evaluator",
    "render_feedback",
    "scrub_text",
]
