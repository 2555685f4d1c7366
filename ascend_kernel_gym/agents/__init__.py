"""Policies, rollout collection and the segment-level GRPO trainer.

Names resolve lazily: importing this package imports no torch (only :class:`HFPolicy`,
:class:`SegmentGRPOTrainer` and what they need do, on first access).
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "ESTIMATORS": "ascend_kernel_gym.agents.advantages",
    "assign_advantages": "ascend_kernel_gym.agents.advantages",
    "group_advantages": "ascend_kernel_gym.agents.advantages",
    "OpenAIChatPolicy": "ascend_kernel_gym.agents.openai_http",
    "PolicyHTTPError": "ascend_kernel_gym.agents.openai_http",
    "Generation": "ascend_kernel_gym.agents.policy",
    "Policy": "ascend_kernel_gym.agents.policy",
    "TaskAwarePolicy": "ascend_kernel_gym.agents.policy",
    "EnvPool": "ascend_kernel_gym.agents.rollout",
    "TokenPolicy": "ascend_kernel_gym.agents.rollout",
    "collect_rollouts": "ascend_kernel_gym.agents.rollout",
    "make_env": "ascend_kernel_gym.agents.rollout",
    "EpisodeRecord": "ascend_kernel_gym.agents.samples",
    "RolloutBatch": "ascend_kernel_gym.agents.samples",
    "SegmentSample": "ascend_kernel_gym.agents.samples",
    "TurnRecord": "ascend_kernel_gym.agents.samples",
    "ChoicePolicy": "ascend_kernel_gym.agents.scripted",
    "ReferencePolicy": "ascend_kernel_gym.agents.scripted",
    "ScriptedPolicy": "ascend_kernel_gym.agents.scripted",
    "HFPolicy": "ascend_kernel_gym.agents.hf",
    "SamplingParams": "ascend_kernel_gym.agents.hf",
    "LoraSettings": "ascend_kernel_gym.agents.hf",
    "SegmentGRPOConfig": "ascend_kernel_gym.agents.config",
    "SegmentGRPOTrainer": "ascend_kernel_gym.agents.trainer",
    "KernelChoiceWrapper": "ascend_kernel_gym.wrappers.choice",
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
