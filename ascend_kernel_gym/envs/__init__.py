"""The ``AscendTriton-v0`` environment, its reward presets, prompts and evaluator sharing.

Names are imported lazily so that ``import ascend_kernel_gym`` (which registers the envs) stays light.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "AscendTritonEnv": "ascend_kernel_gym.envs.ascend_triton",
    "DEFAULT_MAX_OBS_CHARS": "ascend_kernel_gym.envs.ascend_triton",
    "EvaluatorClient": "ascend_kernel_gym.evaluation.remote",
    "EvaluatorServer": "ascend_kernel_gym.evaluation.remote",
    "extract_code": "ascend_kernel_gym.envs.extract",
    "PRESETS": "ascend_kernel_gym.envs.rewards",
    "REWARD_MODES": "ascend_kernel_gym.envs.rewards",
    "resolve_reward": "ascend_kernel_gym.envs.rewards",
    "step_reward": "ascend_kernel_gym.envs.rewards",
    "CHARSET": "ascend_kernel_gym.envs.text",
    "sanitize": "ascend_kernel_gym.envs.text",
    "load_templates": "ascend_kernel_gym.envs.templates",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ascend_kernel_gym.envs' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
