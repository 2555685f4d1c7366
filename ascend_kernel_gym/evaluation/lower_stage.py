"""The ``ascend_lower`` stage: lower the candidate's launched kernels through triton-ascend (issue 23).

Runs in the calling process after the evaluation child returned. This first version only fixes the
hook's signature; the stage itself follows.
"""

from __future__ import annotations

from ascend_kernel_gym.evaluation.job import Job
from ascend_kernel_gym.evaluation.result import EvalResult

LOWER_MODES = ("off", "warn", "enforce")


def run_lower_stage(result: EvalResult, job: Job, mode: str, sandbox: bool = True) -> EvalResult:
    """Add the lowering results to ``result`` (not yet wired: returns ``result`` unchanged)."""
    return result
