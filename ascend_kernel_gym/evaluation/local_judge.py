"""The judge inside the evaluating process: device backends, and stand-alone children.

On ``cuda`` / ``npu`` the candidate's outputs are not shipped out (as bytes through the zygote they
cost seconds per trial at the full profile: measured on an H200, 10-55 s per evaluation against
1 s), and a child run without a zygote (``child.child_main`` called directly, as the
fresh-process baseline of ``bench/gpu_evaluator.py`` does) has no zygote to ask. There
:class:`LocalJudgeLink` gives the child a judge in its own process: the plan and the reference's
results are computed here (:func:`.reference_run.build_plan`, at the correctness stage, after
the candidate was imported) and every trial is judged by the same :class:`.judge.Judge` on the
device's own tensors. Such verdicts are only as trustworthy as the candidate's process (see
docs/evaluation.md, Trusted judge).

Imports torch: only evaluation children import this module.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any

import torch

from ascend_kernel_gym.evaluation.job import Job
from ascend_kernel_gym.evaluation.judge import Judge
from ascend_kernel_gym.evaluation.reference_run import build_plan
from ascend_kernel_gym.evaluation.wire import CONTINUE, PROBE


class LocalJudgeLink:
    """A judge in this process, spoken to like the zygote's (see the module docstring)."""

    def __init__(self, job: Job, device: torch.device, before_reference: Callable[[], None] | None = None) -> None:
        """``before_reference``: run right before the reference runs (the child checks its library
        snapshot there, after pending finalisers of candidate objects have run)."""
        self.job = job
        self.device = device
        self.before_reference = before_reference
        self.judge = Judge(job.task.atol, job.task.rtol, job.num_trials)

    def send(self, control: bytes) -> None:
        """Control bytes are for a zygote; nobody listens here."""

    #: trials are handed over as values of this process, not as bytes
    live = True

    def request_plan(self) -> Any:
        tensors: list[torch.Tensor] = []
        gc.collect()  # finalisers of candidate objects run now, before the check and the reference
        if self.before_reference is not None:
            self.before_reference()
        gc.disable()  # and none runs while the reference does
        try:
            header = build_plan(self.job, self.device, tensors)
        finally:
            gc.enable()
        self.judge.load_live_reference(header, tensors)
        return self.judge.plan()

    def send_trial_live(
        self, index: int | str, output: Any, again: Any, aliased: list[bool], changed: list[int], after: dict[int, Any]
    ) -> bytes:
        verdict = self.judge.judge_live(index, output, again, aliased, changed, after)
        if verdict.failure is not None:
            raise verdict.failure
        return PROBE if verdict.action == "probe" else CONTINUE

    def wait_quiet(self) -> None:
        """No siblings to wait for (the result then carries no quiet-device fields)."""
        return None

    def timing_over(self) -> None:
        """No lease to give back."""
