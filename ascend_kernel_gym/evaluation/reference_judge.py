"""The judge in the reference child: device backends, where outputs are too large to copy out.

On ``cuda`` the zygote cannot judge: it has no device, and copying every trial's outputs (up to
hundreds of megabytes each) to the host, through pipes, and comparing them on one CPU thread
cost seconds per evaluation on an H200. So the reference child, which never sees the candidate's
code, stays on as the judge: it builds the plan and the reference's results on the device
(:func:`.reference_run.build_plan`), sends the zygote only the plan (seeds and distributions),
then judges each trial the zygote forwards from the candidate's child. Those trials carry the
candidate's device tensors by CUDA IPC handle (:mod:`.device_ipc`); each one is copied into this
process's memory (device to device) before :class:`.judge.Judge` compares it with the
reference's results, and the verdict goes back to the zygote as JSON:
``{"action", "failure", "passed", "max_abs", "max_rel", "out_bytes"}``.

A tensor the candidate's child could not hand over by handle arrives as bytes and is moved to
the device here. The imports of one trial may not exceed :meth:`.judge.Judge.trial_bytes_limit`
(four times the reference's largest trial, outputs and changed inputs, plus 64 MB), so a claimed
shape cannot make this process allocate without bound.

Imports torch: only evaluation children import this module.
"""

from __future__ import annotations

import json
import os
from typing import Any, NoReturn

import torch

from ascend_kernel_gym.evaluation.child_stream import MAX_TRIAL_HEADER
from ascend_kernel_gym.evaluation.errors import StageError, Verdict
from ascend_kernel_gym.evaluation.job import Job
from ascend_kernel_gym.evaluation.judge import Judge
from ascend_kernel_gym.evaluation.process import Prepared
from ascend_kernel_gym.evaluation.reference_run import plan_or_failure
from ascend_kernel_gym.evaluation.result import ErrorType
from ascend_kernel_gym.evaluation.tensor_wire import WireError, encode_payload_parts
from ascend_kernel_gym.evaluation.wire import HEADER, RESULT, frame, read_exact, write_all


def judge_main(job: Job, job_fd: int, result_fd: int, token: str, prepared: Prepared) -> NoReturn:
    """Build the plan and the reference's results, send the plan, then judge trials until the zygote closes."""
    tensors: list[torch.Tensor] = []
    header = plan_or_failure(job, prepared, tensors)
    judge: Judge | None = None
    message: dict[str, Any] = {"error": header["error"]} if "error" in header else {}
    try:  # a failure past this point ends the child without an answer: the zygote's harness_error
        if not message:
            judge = Judge(job.task.atol, job.task.rtol, job.num_trials)
            judge.load_live_reference(header, tensors)
            message = {
                "plan": judge.plan(),
                "slowest_ref_s": judge.slowest_ref_s,
                "trial_bytes_limit": judge.trial_bytes_limit(),
            }
        message["token"] = token
        write_all(result_fd, RESULT, *encode_payload_parts(message, []))
        if judge is not None and prepared.device is not None:
            _serve(judge, prepared.device, job_fd, result_fd)
    finally:
        os._exit(0)


def _serve(judge: Judge, device: torch.device, job_fd: int, result_fd: int) -> None:
    budget = judge.trial_bytes_limit()
    while True:
        trial = _read_trial(job_fd)
        if trial is None:
            return  # the zygote is done with this evaluation
        header, body = trial
        try:
            verdict = judge.judge(header, body, importer=_Importer(device, budget), place=device)
        except StageError as failure:  # the judge could not read an output (a driver failure)
            verdict = Verdict("fail", failure)
        write_all(result_fd, frame(json.dumps(verdict_message(judge, verdict)).encode()))


def verdict_message(judge: Judge, verdict: Verdict) -> dict[str, Any]:
    """What the zygote's :class:`.remote_judge.RemoteJudge` needs after one trial."""
    failure = None
    if verdict.failure is not None:
        f = verdict.failure
        failure = {"type": f.error_type.value, "message": f.message, "hack": f.hack, "metrics": f.metrics}
    return {
        "action": verdict.action,
        "failure": failure,
        "passed": judge.passed,
        "max_abs": judge.max_abs,
        "max_rel": judge.max_rel,
        "out_bytes": judge.out_bytes,
    }


class _Importer:
    """Copies the candidate's tensors handed over by IPC handle, within a byte budget per trial."""

    def __init__(self, device: torch.device, budget: int) -> None:
        self.device = device
        self.left = budget

    def __call__(self, entry: dict[str, Any], dtype: torch.dtype, shape: list[int]) -> torch.Tensor:
        from ascend_kernel_gym.evaluation.device_ipc import IpcError, import_tensor

        size = torch.empty((), dtype=dtype).element_size()
        for n in shape:
            size *= n
        self.left -= size
        if self.left < 0:
            raise WireError("the trial's outputs are far larger than the reference's")
        try:
            return import_tensor(entry, dtype, shape, self.device)
        except IpcError as exc:
            if exc.malformed:
                raise WireError(str(exc)) from None
            raise StageError(ErrorType.HARNESS_ERROR, f"the judge could not read the output: {exc}") from None


def _read_trial(fd: int) -> tuple[dict[str, Any], bytes] | None:
    """One forwarded trial: a framed JSON header, then its framed body (None at end of file)."""
    head_size = read_exact(fd, HEADER.size)
    if head_size is None:
        return None
    (length,) = HEADER.unpack(head_size)
    if length > MAX_TRIAL_HEADER:
        return None
    head = read_exact(fd, length)
    body_size = read_exact(fd, HEADER.size)
    if head is None or body_size is None:
        return None
    body = read_exact(fd, HEADER.unpack(body_size)[0])  # b"" for an empty body
    if body is None:
        return None
    try:
        header = json.loads(head)
    except ValueError:
        header = {}
    return (header if isinstance(header, dict) else {}), body
