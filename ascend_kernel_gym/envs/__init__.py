"""The ``AscendTriton-v0`` environment, its reward presets, prompts and text helpers.

Names resolve lazily so that ``import ascend_kernel_gym`` (which registers the envs) stays light.
The evaluator server and client for envs in several processes are in
:mod:`ascend_kernel_gym.evaluation` (``EvaluatorServer``, ``EvaluatorClient``).
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "AscendTritonEnv": "ascend_kernel_gym.envs.ascend_triton",
    "DEFAULT_MAX_OBS_CHARS": "ascend_kernel_gym.envs.ascend_triton",
    "extract_code": "ascend_kernel_gym.envs.extract",
    "PRESETS": "ascend_kernel_gym.envs.rewards",
    "REWARD_MODES": "ascend_kernel_gym.envs.rewards",
    "resolve_reward": "ascend_kernel_gym.envs.rewards",
    "step_reward": "ascend_kernel_gym.envs.rewards",
    "CHARSET": "ascend_kernel_gym.envs.text",
    "sanitize": "ascend_kernel_gym.envs.text",
    "load_templates": "ascend_kernel_gym.envs.templates",
    "register_envs": "ascend_kernel_gym.envs.registration",
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
