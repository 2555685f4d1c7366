"""Everything about Ascend chips and triton-ascend: chip profiles, rule checks, the cost model.

- chip profiles: :mod:`.chips` (bundled JSON files in ``chips/``);
- rule checks: :mod:`.checks` (entry: ``run_ascend_checks``) over :mod:`.rules` (the rule table),
  :mod:`.source` (parsing a candidate), :mod:`.values` (abstract values), :mod:`.contexts` (launch
  records), :mod:`.analyzer` (the kernel analyser), :mod:`.launch_rules`, :mod:`.host_rules` and
  :mod:`.findings`; :mod:`.capture` records launches on ``meta`` tensors, :mod:`.report` renders
  the findings as text;
- the cost model: :mod:`.cost_model` (the facade) over :mod:`.counters` (counting interpreted
  kernels), :mod:`.roofline` (a task's floor), :mod:`.estimator` (time on a chip) and
  :mod:`.cost_process` (running estimates in a separate process).

Depends on nothing in ``evaluation/`` but its plain data types. Names resolve lazily; importing
this package imports neither torch nor triton.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "ChipProfile": "ascend_kernel_gym.ascend.chips",
    "list_chips": "ascend_kernel_gym.ascend.chips",
    "load_chip": "ascend_kernel_gym.ascend.chips",
    "resolve_chip": "ascend_kernel_gym.ascend.chips",
    "RULES": "ascend_kernel_gym.ascend.rules",
    "Rule": "ascend_kernel_gym.ascend.rules",
    "run_ascend_checks": "ascend_kernel_gym.ascend.checks",
    "format_ascend_report": "ascend_kernel_gym.ascend.report",
    "capture_launches": "ascend_kernel_gym.ascend.capture",
    "KernelCounters": "ascend_kernel_gym.ascend.counters",
    "LaunchCounters": "ascend_kernel_gym.ascend.counters",
    "instrument": "ascend_kernel_gym.ascend.counters",
    "reference_costs": "ascend_kernel_gym.ascend.roofline",
    "task_roofline": "ascend_kernel_gym.ascend.roofline",
    "estimate": "ascend_kernel_gym.ascend.estimator",
    "estimate_kernel": "ascend_kernel_gym.ascend.cost_process",
    "estimate_variants": "ascend_kernel_gym.ascend.cost_process",
    "estimate_in_process": "ascend_kernel_gym.ascend.cost_process",
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
