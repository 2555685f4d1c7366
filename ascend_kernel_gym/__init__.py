"""ascend-kernel-gym: a Gymnasium environment for LLM agents writing Triton kernels for Ascend NPUs.

Importing the package registers the environments (``AscendTriton-v0``, ``AscendTriton-ATRL-v0``,
``AscendKernelChoice-v0``) and imports neither torch nor triton. The main names resolve lazily::

    from ascend_kernel_gym import AscendTritonEnv, Evaluator, EvalRequest, EvalResult, Task, get_task, load_suite

Everything else lives in the subpackages: ``tasks``, ``backends``, ``ascend``, ``evaluation``,
``envs``, ``wrappers``, ``integrations``, ``kb_index``, ``agents``, ``leaderboard``.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

from ascend_kernel_gym.envs.registration import register_envs

register_envs()

_EXPORTS = {
    "AscendTritonEnv": "ascend_kernel_gym.envs.ascend_triton",
    "Evaluator": "ascend_kernel_gym.evaluation.evaluator",
    "EvalRequest": "ascend_kernel_gym.evaluation.result",
    "EvalResult": "ascend_kernel_gym.evaluation.result",
    "Task": "ascend_kernel_gym.tasks.task",
    "get_task": "ascend_kernel_gym.tasks.suite",
    "load_suite": "ascend_kernel_gym.tasks.suite",
    # verifiers finds an environment by its package: `vf-eval ascend-kernel-gym`, vf.load_environment(...)
    "load_environment": "ascend_kernel_gym.integrations.verifiers_env",
}

__all__ = ["__version__", *sorted(_EXPORTS)]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
