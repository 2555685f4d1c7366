"""A cost model on Triton's interpreter: count what a kernel does, estimate its time on a chip.

This module is the stable import path of the cost model; the parts live in their own modules:

- :mod:`~ascend_kernel_gym.ascend.counters`: :func:`instrument` counts the bytes, FLOPs and
  element operations of every interpreted launch (optionally on a sample of a large grid:
  :func:`sample_program_ids`, :func:`extrapolate`) into :class:`KernelCounters`.
- :mod:`~ascend_kernel_gym.ascend.roofline`: :func:`task_roofline` / :func:`reference_costs`,
  the floor of a task and the reference's per-operator costs.
- :mod:`~ascend_kernel_gym.ascend.estimator`: :func:`estimate`, the time of the counted launches
  on a chip profile, always labelled ``"estimate"`` with its assumptions.
- :mod:`~ascend_kernel_gym.ascend.cost_process`: :func:`estimate_kernel` /
  :func:`estimate_variants` (a fresh ``TRITON_INTERPRET=1`` process, so they work from CUDA / NPU
  processes) and :func:`estimate_in_process`.

``python -m ascend_kernel_gym.ascend.cost_model`` still runs the estimate child (as
``python -m ascend_kernel_gym.ascend.cost_process`` does). Imports torch / triton only inside functions.
"""

from __future__ import annotations

from ascend_kernel_gym.ascend.cost_process import child_main, estimate_in_process, estimate_kernel, estimate_variants
from ascend_kernel_gym.ascend.counters import (
    KernelCounters,
    LaunchCounters,
    extrapolate,
    instrument,
    sample_program_ids,
)
from ascend_kernel_gym.ascend.estimator import LABEL, estimate
from ascend_kernel_gym.ascend.roofline import reference_costs, task_roofline

__all__ = [
    "LABEL",
    "KernelCounters",
    "LaunchCounters",
    "estimate",
    "estimate_in_process",
    "estimate_kernel",
    "estimate_variants",
    "extrapolate",
    "instrument",
    "reference_costs",
    "sample_program_ids",
    "task_roofline",
]

if __name__ == "__main__":  # pragma: no cover - the child entry of older callers
    child_main()
