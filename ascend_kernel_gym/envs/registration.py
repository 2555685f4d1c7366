"""Environment registration, done at ``import ascend_kernel_gym`` (Gymnasium 1.x has no plugins)."""

from __future__ import annotations

import gymnasium as gym

ENTRY_POINT = "ascend_kernel_gym.envs.ascend_triton:AscendTritonEnv"


def register_envs() -> None:
    """Register ``AscendTriton-v0`` (and presets). Safe to call more than once."""
    if "AscendTriton-v0" not in gym.registry:
        # Timing-based rewards make steps nondeterministic; this also tells check_env to skip
        # its step-determinism check.
        gym.register(id="AscendTriton-v0", entry_point=ENTRY_POINT, nondeterministic=True)
