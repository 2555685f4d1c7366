"""ascend-kernel-gym: a Gymnasium environment for LLM agents writing Triton kernels for Ascend NPUs.

Importing the package registers the environments and imports neither torch nor triton.
"""

from __future__ import annotations

__version__ = "0.1.0"

from ascend_kernel_gym.envs.registration import register_envs

register_envs()

__all__ = ["__version__"]
