"""The sandboxed, cascaded evaluator: static -> compile -> correctness -> performance.

Importing this package is light (no torch, no triton; names resolve lazily): candidate code only
ever runs in evaluator children.

    from ascend_kernel_gym.evaluation import Evaluator, EvalRequest, render_feedback
    with Evaluator(backend="interpreter", workers=2) as ev:
        result = ev.evaluate(EvalRequest(task=task, code=code))
    print(render_feedback(result))

``EvaluatorServer`` shares one evaluator with envs in other processes, which reach it through a
picklable ``EvaluatorClient``.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Evaluator": "ascend_kernel_gym.evaluation.evaluator",
    "close_shared_evaluators": "ascend_kernel_gym.evaluation.evaluator",
    "get_shared_evaluator": "ascend_kernel_gym.evaluation.evaluator",
    "render_feedback": "ascend_kernel_gym.evaluation.feedback",
    "scrub_text": "ascend_kernel_gym.evaluation.feedback",
    "HACK_ERROR_TYPES": "ascend_kernel_gym.evaluation.result",
    "ErrorType": "ascend_kernel_gym.evaluation.result",
    "EvalRequest": "ascend_kernel_gym.evaluation.result",
    "EvalResult": "ascend_kernel_gym.evaluation.result",
    "LaunchRecord": "ascend_kernel_gym.evaluation.result",
    "Stage": "ascend_kernel_gym.evaluation.result",
    "StaticReport": "ascend_kernel_gym.evaluation.static",
    "check_source": "ascend_kernel_gym.evaluation.static",
    "EvaluatorClient": "ascend_kernel_gym.evaluation.remote",
    "EvaluatorServer": "ascend_kernel_gym.evaluation.remote",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
