"""The judge inside the evaluating process: for a stand-alone child, which has no zygote.

A child run without a zygote (``child.child_main`` called directly, as the fresh-process
baseline of ``bench/gpu_evaluator.py`` does) has no trusted judge to talk to. :class:`LocalJudgeLink`
gives it one in its own process, behind the same interface as :class:`.wire.ZygoteLink`: the plan
and the reference's results are computed here (:func:`.reference_run.build_plan`, after the
candidate was imported) and every trial goes through the same bytes and the same
:class:`.judge.Judge`. Verdicts reached this way are only as trustworthy as the process: use it
for baselines and tests, never for rewards (the warm pool always judges in the zygote).

Imports torch: only evaluation children import this module.
"""

from __future__ import annotations

from typing import Any

import torch

from ascend_kernel_gym.evaluation.job import Job
from ascend_kernel_gym.evaluation.judge import Judge
from ascend_kernel_gym.evaluation.reference_run import build_plan
from ascend_kernel_gym.evaluation.tensor_wire import encode_payload
from ascend_kernel_gym.evaluation.wire import CONTINUE, PROBE, split_payload


class LocalJudgeLink:
    """A judge in this process, spoken to like the zygote's (see the module docstring)."""

    def __init__(self, job: Job, device: torch.device) -> None:
        self.job = job
        self.device = device
        self.judge = Judge(job.task.atol, job.task.rtol, job.num_trials)

    def send(self, control: bytes) -> None:
        """Control bytes are for a zygote; nobody listens here."""

    def request_plan(self) -> Any:
        tensors: list[torch.Tensor] = []
        header = build_plan(self.job, self.device, tensors)
        parsed = split_payload(encode_payload(header, tensors))
        assert parsed is not None
        self.judge.load_reference(parsed[1], parsed[2])
        if self.judge.reference_failure is not None:
            raise self.judge.reference_failure
        return self.judge.plan()

    def send_trial(self, parts: list[memoryview | bytes]) -> bytes:
        parsed = split_payload(b"".join(parts))
        if parsed is None:
            return b""
        verdict = self.judge.judge(parsed[1], parsed[2])
        if verdict.failure is not None:
            raise verdict.failure
        return PROBE if verdict.action == "probe" else CONTINUE

    def wait_quiet(self) -> None:
        """No siblings to wait for (the result then carries no quiet-device fields)."""
        return None
