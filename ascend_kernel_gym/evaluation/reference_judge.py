"""The judge in the reference child: device backends, where outputs are too large to copy out.

On ``cuda`` the zygote cannot judge: it has no device, and copying every trial's outputs (up to
hundreds of megabytes each) to the host, through pipes, and comparing them on one CPU thread
cost seconds per evaluation on an H200. So the reference child, which never sees the candidate's
code, stays on as the judge: it builds the plan and the reference's results on the device
(:func:`.reference_run.build_plan`), sends the zygote only the plan (seeds and distributions),
then judges each trial the zygote forwards from the candidate's child. A varied trial's moved
runs of the reference (its sensitivity to one rounding step) are made here only for an output
that needs the slack they add (:attr:`.job.Job.lazy_sensitivity`). Those trials carry the
candidate's device tensors by CUDA IPC handle (:mod:`.device_ipc`); each one is copied into this
process's memory (device to device) before :class:`.judge.Judge` compares it with the
reference's results, and the verdict goes back to the zygote as JSON:
``{"action", "failure", "passed", "max_abs", "max_rel", "out_bytes", "device_bytes"}`` (the last:
the peak device memory this child reserved since it sent the plan; the plan's message carries the
peak of building it. The two size the task's later evaluations on a shared device). Between the
two the child gives the plan's temporaries back to the device, and once every trial passed it
drops the reference's outputs as well (:meth:`.judge.Judge.release`): the candidate's timing
stage runs next to a judge that holds only its context.

The child serves one evaluation after another: when an evaluation is over the zygote writes
:data:`.wire.END_OF_JOB` where the next trial would come, the child lets go of that evaluation's
tensors and waits for the next job on the same pipe (the zygote keeps it as the next reference
spare), so a worker starts one judging context per :data:`.wire.JUDGE_MAX_JOBS` evaluations
instead of one per evaluation. Before each later job it collects garbage, empties the device's
memory cache (then says :data:`.wire.FREED`: the zygote holds the device until then) and puts
back the torch settings a task's reference may have changed (:func:`torch_settings`). It never
runs the candidate's code; a child whose job ended any other way (its plan unfinished, a failure
of the task's reference, a broken pipe) is killed as before.

A tensor the candidate's child could not hand over by handle arrives as bytes and is moved to
the device here. The imports of one trial may not exceed :meth:`.judge.Judge.trial_bytes_limit`
(four times the reference's largest trial, outputs and changed inputs, plus 64 MB), so a claimed
shape cannot make this process allocate without bound.

Imports torch: only evaluation children import this module.
"""

from __future__ import annotations

import gc
import json
import os
from collections.abc import Callable
from typing import Any, NoReturn

import torch

from ascend_kernel_gym.evaluation.child_stream import MAX_TRIAL_HEADER
from ascend_kernel_gym.evaluation.errors import StageError, Verdict
from ascend_kernel_gym.evaluation.job import Job
from ascend_kernel_gym.evaluation.judge import Judge
from ascend_kernel_gym.evaluation.process import Prepared, device_peak_bytes
from ascend_kernel_gym.evaluation.reference_run import Widen, plan_or_failure
from ascend_kernel_gym.evaluation.result import ErrorType
from ascend_kernel_gym.evaluation.tensor_wire import WireError, encode_payload_parts
from ascend_kernel_gym.evaluation.wire import (
    FREED,
    HEADER,
    JOB_TAKEN,
    RESULT,
    await_plan_start,
    frame,
    read_exact,
    read_message,
    write_all,
)


def judge_main(job: Job, job_fd: int, result_fd: int, token: str, prepared: Prepared) -> NoReturn:
    """Judge ``job``, then each further job the zygote hands over (see the module docstring)."""
    settings = torch_settings()
    try:  # a failure past this point ends the child without an answer: the zygote's harness_error
        while _judge_one(job, job_fd, result_fd, token, prepared):
            # Before waiting: an idle judge holding the last job's cached blocks left the
            # references of other workers' jobs, and their retries alone, without device memory
            # (eight workers on an H100, 2026-12-05).
            _free_device_memory(prepared.device)
            if prepared.device is not None:  # the next job's peak is its own
                device_peak_bytes(prepared.device.type, reset=True)
            os.write(result_fd, FREED)  # the zygote lets go of the device only now
            message = read_message(job_fd)
            if not isinstance(message, dict) or message.get("role") != "judge":
                return  # the zygote closed the pipe (it shuts down, or replaces this child)
            job, token = message["job"], str(message.get("token", ""))
            os.write(result_fd, JOB_TAKEN)
            settings()
    finally:
        os._exit(0)


def _free_device_memory(device: torch.device | None, collect: bool = True) -> None:
    """Give the device the memory the last job's tensors held (the caching allocator keeps it);
    ``collect``: collect garbage first (tensors in reference cycles)."""
    if collect:
        gc.collect()
    if device is None or device.type == "cpu":
        return
    empty_cache = getattr(getattr(torch, device.type, None), "empty_cache", None)
    if empty_cache is not None:
        empty_cache()


def _judge_one(job: Job, job_fd: int, result_fd: int, token: str, prepared: Prepared) -> bool:
    """Build the plan and the reference's results, send the plan, judge trials until the zygote
    ends the evaluation; True when it did so with :data:`.wire.END_OF_JOB` (another job may follow).
    A deferred plan (:attr:`.job.Job.defer_plan`) waits for the zygote's word first; an evaluation
    that ends before it (its candidate's first call failed) leaves this child as it found it."""
    if job.defer_plan:
        start = await_plan_start(job_fd)
        if start is not True:
            return start is False
    tensors: list[torch.Tensor] = []
    deferred: dict[int, Widen] | None = {} if job.lazy_sensitivity else None
    header = plan_or_failure(job, prepared, tensors, deferred)
    message: dict[str, Any] = {"error": header["error"]} if "error" in header else {}
    judge: Judge | None = None
    if not message:
        judge = Judge(job.task.atol, job.task.rtol, job.num_trials)
        judge.load_live_reference(header, tensors, deferred)
        message = {
            "plan": judge.plan(),
            "slowest_ref_s": judge.slowest_ref_s,
            "trial_bytes_limit": judge.trial_bytes_limit(),
            "device_bytes": device_peak_bytes(job.backend),
        }
    del header, tensors
    message["token"] = token
    write_all(result_fd, RESULT, *encode_payload_parts(message, []))
    if judge is None or prepared.device is None:
        return False
    # The plan's temporaries go back to the device, and the verdicts report the judging's own peak
    # (the candidate's trials run next to it, not next to the plan: .memory_book.measured_need).
    _free_device_memory(prepared.device, collect=False)  # the candidate's first trial may be on its way
    device_peak_bytes(prepared.device.type, reset=True)
    return _serve(judge, prepared.device, job_fd, result_fd)


def torch_settings() -> Callable[[], None]:
    """A function that puts back torch's process-wide settings as they are now (a task's
    reference may change them: the default dtype, TF32, determinism, threads)."""
    dtype = torch.get_default_dtype()
    grad = torch.is_grad_enabled()
    deterministic = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    precision = torch.get_float32_matmul_precision()
    matmul_tf32 = torch.backends.cuda.matmul.allow_tf32
    reduced = torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction
    cudnn = torch.backends.cudnn
    cudnn_flags = (cudnn.enabled, cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32)
    threads = torch.get_num_threads()

    def restore() -> None:
        torch.set_default_dtype(dtype)
        torch.set_grad_enabled(grad)
        torch.use_deterministic_algorithms(deterministic, warn_only=warn_only)
        torch.set_float32_matmul_precision(precision)
        torch.backends.cuda.matmul.allow_tf32 = matmul_tf32
        torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = reduced
        cudnn.enabled, cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32 = cudnn_flags
        torch.set_num_threads(threads)

    return restore


def _serve(judge: Judge, device: torch.device, job_fd: int, result_fd: int) -> bool:
    """Judge forwarded trials; True at :data:`.wire.END_OF_JOB`, False at end of file."""
    budget = judge.trial_bytes_limit()
    while True:
        trial = _read_trial(job_fd)
        if trial is None:
            return False  # the zygote closed the pipe
        if trial == END:
            return True  # this evaluation is over; the next job may follow
        header, body = trial
        try:
            verdict = judge.judge(header, body, importer=_Importer(device, budget), place=device)
        except StageError as failure:  # the judge could not read an output (a driver failure)
            verdict = Verdict("fail", failure)
        if judge.done:  # the reference's outputs are not needed again: the timing stage runs without them
            judge.release()
            _free_device_memory(device, collect=False)
        message = verdict_message(judge, verdict)
        message["device_bytes"] = device_peak_bytes(device.type)
        write_all(result_fd, frame(json.dumps(message).encode()))


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
        "strays": judge.strays,
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


#: what :func:`_read_trial` returns for :data:`.wire.END_OF_JOB`
END = "end"


def _read_trial(fd: int) -> tuple[dict[str, Any], bytes] | str | None:
    """One forwarded trial: a framed JSON header, then its framed body (None at end of file,
    :data:`END` for the end of the evaluation: an empty header)."""
    head_size = read_exact(fd, HEADER.size)
    if head_size is None:
        return None
    (length,) = HEADER.unpack(head_size)
    if length == 0:
        return END
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
