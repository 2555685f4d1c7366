"""Ascend rule checks: triton-ascend's documented limits, checked on any backend.

The checks read the candidate's source (its ``@triton.jit`` functions, their launch sites and
``ModelNew``; :mod:`~ascend_kernel_gym.ascend.source`) and the evaluator's launch records (grid,
constexpr values, ``num_warps`` / ``num_stages``, shapes and dtypes of tensor arguments;
:mod:`~ascend_kernel_gym.ascend.contexts`). Inside each kernel a small abstract interpreter
(:mod:`~ascend_kernel_gym.ascend.analyzer`) follows shapes, dtypes and a few flags (loaded from
memory, made by ``tl.where``, made by ``//`` / ``%``, made by ``tl.dot``) through assignments, so
that rules such as "int64 arithmetic on index tensors" or "UB footprint of the live tiles" can be
decided without running anything; :mod:`~ascend_kernel_gym.ascend.launch_rules` and
:mod:`~ascend_kernel_gym.ascend.host_rules` decide the rules on launches and on host code.

Entry points (this module is their stable import path):

- :func:`run_ascend_checks` ``(source, launches, chip) -> list[dict]``: one dict per finding with
  ``rule, severity ("error" | "warning"), value, limit, message, fix, kb_id`` (plus ``kernel`` and
  ``line`` where known). The evaluator calls it after the correctness stage; in ``enforce`` mode a
  finding of severity ``error`` fails the turn with ``ErrorType.ASCEND_CONSTRAINT``.
- :func:`format_ascend_report` ``(result) -> str`` (:mod:`~ascend_kernel_gym.ascend.report`): the
  findings and the cost-model estimate of an :class:`~ascend_kernel_gym.evaluation.result.EvalResult`
  as plain text (``akg check``).
- :func:`capture_launches` ``(task, code, profile)`` (:mod:`~ascend_kernel_gym.ascend.capture`):
  the launch records of one forward call without running any kernel (tensors on the ``meta``
  device), for checking a kernel at the ``full`` shapes on a machine that cannot run them.

Every rule is listed in :data:`RULES` (:mod:`~ascend_kernel_gym.ascend.rules`) with its
knowledge-base entry; docs/ascend.md has the table. Imports neither torch nor triton at import time.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ascend_kernel_gym.ascend.analyzer import KernelAnalyzer
from ascend_kernel_gym.ascend.capture import capture_launches
from ascend_kernel_gym.ascend.chips import ChipProfile, resolve_chip
from ascend_kernel_gym.ascend.contexts import analysis_contexts, launch_dict
from ascend_kernel_gym.ascend.findings import Findings
from ascend_kernel_gym.ascend.host_rules import check_host_code
from ascend_kernel_gym.ascend.launch_rules import check_launch
from ascend_kernel_gym.ascend.report import format_ascend_report
from ascend_kernel_gym.ascend.rules import RULES, Rule
from ascend_kernel_gym.ascend.source import parse_module
from ascend_kernel_gym.evaluation.result import LaunchRecord

__all__ = [
    "RULES",
    "Rule",
    "capture_launches",
    "format_ascend_report",
    "run_ascend_checks",
]


def run_ascend_checks(
    source: str,
    launches: Iterable[LaunchRecord | dict[str, Any]] | None,
    chip: str | ChipProfile = "910B3",
) -> list[dict[str, Any]]:
    """Check a candidate against triton-ascend's documented limits.

    Args:
        source: the candidate's Python source.
        launches: the launch records of one or more forward calls (``EvalResult.launches`` or
            their dicts); may be empty, then only static rules and call-site constants are used.
        chip: an Ascend chip profile (name, JSON path or :class:`ChipProfile`).

    Returns:
        One dict per finding: ``rule``, ``severity`` (``"error"`` / ``"warning"``), ``value``,
        ``limit``, ``message``, ``fix``, ``kb_id``, ``kernel``, ``line``; errors first. An
        unparsable source gives ``[]`` (the static stage reports syntax errors).
    """
    profile = resolve_chip(chip)
    if not profile.is_ascend:
        raise ValueError(f"chip must be an Ascend profile for the Ascend checks, got {profile.name!r} ({profile.kind})")
    if not isinstance(source, str):
        raise TypeError(f"source must be a str, got {type(source).__name__}")
    records = [launch_dict(launch) for launch in (launches or [])]
    module = parse_module(source)
    out = Findings()
    for launch in records:
        check_launch(module, launch, profile, out)
    if module is None:
        return out.result()
    check_host_code(module, out)
    for kernel in module.kernels.values():
        mine = [launch for launch in records if launch["kernel"] == kernel.name]
        for ctx in analysis_contexts(module, kernel, mine):
            KernelAnalyzer(module, kernel, ctx, profile, out).run()
    return out.result()
