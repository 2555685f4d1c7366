"""Environment registration, done at ``import ascend_kernel_gym`` (Gymnasium 1.x has no plugins)."""

from __future__ import annotations

import gymnasium as gym

ENTRY_POINT = "ascend_kernel_gym.envs.ascend_triton:AscendTritonEnv"
#: The ATRL-style harness: AscendTriton-v0 with compaction and knowledge-base tips (built by ``build_stack``).
ATRL_ENTRY_POINT = "ascend_kernel_gym.wrappers.stack:make_atrl_env"
#: A numeric decision problem over kernel variants, for libraries that cannot consume Text spaces (SB3).
KERNEL_CHOICE_ENTRY_POINT = "ascend_kernel_gym.integrations.sb3:KernelChoiceEnv"


def register_envs() -> None:
    """Register ``AscendTriton-v0`` (and presets). Safe to call more than once."""
    if "AscendTriton-v0" not in gym.registry:
        # Timing-based rewards make steps nondeterministic; this also tells check_env to skip
        # its step-determinism check.
        gym.register(id="AscendTriton-v0", entry_point=ENTRY_POINT, nondeterministic=True)
    if "AscendTriton-ATRL-v0" not in gym.registry:
        gym.register(id="AscendTriton-ATRL-v0", entry_point=ATRL_ENTRY_POINT, nondeterministic=True)
    if "AscendKernelChoice-v0" not in gym.registry:
        gym.register(id="AscendKernelChoice-v0", entry_point=KERNEL_CHOICE_ENTRY_POINT, nondeterministic=True)
