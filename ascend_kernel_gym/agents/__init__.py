"""Policies, rollout collection and the segment-level GRPO trainer.

Importing this package does not import torch: :class:`HFPolicy`, :class:`SegmentGRPOTrainer` and
:class:`SegmentGRPOConfig` are loaded on first access.
"""

from __future__ import annotations

from typing import Any

from ascend_kernel_gym.agents.advantages import ESTIMATORS, assign_advantages, group_advantages
from ascend_kernel_gym.agents.openai_http import OpenAIChatPolicy, PolicyHTTPError
from ascend_kernel_gym.agents.policy import Generation, Policy
from ascend_kernel_gym.agents.rollout import EnvPool, TokenPolicy, collect_rollouts, make_env
from ascend_kernel_gym.agents.samples import EpisodeRecord, RolloutBatch, SegmentSample, TurnRecord
from ascend_kernel_gym.agents.scripted import ChoicePolicy, ReferencePolicy, ScriptedPolicy

_LAZY = {
    "HFPolicy": "ascend_kernel_gym.agents.hf",
    "SamplingParams": "ascend_kernel_gym.agents.hf",
    "LoraSettings": "ascend_kernel_gym.agents.hf",
    "SegmentGRPOConfig": "ascend_kernel_gym.agents.config",
    "SegmentGRPOTrainer": "ascend_kernel_gym.agents.trainer",
    "KernelChoiceWrapper": "ascend_kernel_gym.wrappers.choice",
}

__all__ = [
    "ESTIMATORS",
    "ChoicePolicy",
    "EnvPool",
    "EpisodeRecord",
    "Generation",
    "HFPolicy",
    "KernelChoiceWrapper",
    "LoraSettings",
    "OpenAIChatPolicy",
    "Policy",
    "PolicyHTTPError",
    "ReferencePolicy",
    "RolloutBatch",
    "SamplingParams",
    "ScriptedPolicy",
    "SegmentGRPOConfig",
    "SegmentGRPOTrainer",
    "SegmentSample",
    "TokenPolicy",
    "TurnRecord",
    "assign_advantages",
    "collect_rollouts",
    "group_advantages",
    "make_env",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'ascend_kernel_gym.agents' has no attribute {name!r}")
