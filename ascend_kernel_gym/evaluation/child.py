"""The evaluation that runs inside one forked evaluator child: its entry point and its stages in order.

The zygote (:mod:`.zygote`) forks two fresh children per evaluation, each running
:func:`child_entry`: it sets itself up (:mod:`.process`) and waits for its job. The job's role
decides the rest: the reference child computes the reference's results (:mod:`.reference_run`);
the candidate's child calls :func:`child_main`, which runs the stages: compile
(:mod:`.compile_stage`: task, reference, recorder, library snapshot, sandbox guard, the candidate
imported and constructed), correctness (:mod:`.correctness`: outputs shipped to the judge in the
zygote), the Ascend checks and cost model (:mod:`.ascend_stage`) and, on devices, timing
(:mod:`.timing`). It reports exactly one result message through a pipe (:mod:`.wire`) and ends with ``os._exit``;
nothing it does can reach the zygote or the calling process.

Imports torch and triton: only the zygote and its children import this module.
"""

from __future__ import annotations

import gc
import os
import shutil
import time
import traceback
from typing import NoReturn

from ascend_kernel_gym.backends import interpreter_memcheck
from ascend_kernel_gym.evaluation import torch_globals
from ascend_kernel_gym.evaluation.ascend_stage import run_ascend_hooks
from ascend_kernel_gym.evaluation.compile_stage import run_compile
from ascend_kernel_gym.evaluation.correctness import run_correctness
from ascend_kernel_gym.evaluation.errors import (
    HARNESS_OUT_OF_MEMORY,
    StageError,
    classify_exception,
    recorded_out_of_bounds,
)
from ascend_kernel_gym.evaluation.job import Job
from ascend_kernel_gym.evaluation.local_judge import LocalJudgeLink
from ascend_kernel_gym.evaluation.process import ChildSetup, Prepared, device_name, limit_memory, own_rss_bytes, prepare
from ascend_kernel_gym.evaluation.reference_judge import judge_main
from ascend_kernel_gym.evaluation.reference_run import reference_main
from ascend_kernel_gym.evaluation.result import ErrorType, Stage
from ascend_kernel_gym.evaluation.snapshot import check_snapshot
from ascend_kernel_gym.evaluation.state import ChildState, PartTimer, ResultWriter, apply_failure
from ascend_kernel_gym.evaluation.timing_stage import run_timing
from ascend_kernel_gym.evaluation.wire import JOB_TAKEN, NOT_READY, READY, RESULT, ZygoteLink, read_message


def child_entry(setup: ChildSetup, job_fd: int, result_fd: int) -> NoReturn:
    """Entry point of a forked child: prepare, wait for the job on ``job_fd``, evaluate it.

    A child forked ahead of its job (the zygote's spare) does the set-up and the device
    initialisation while the previous evaluation runs; an end of file instead of a job (the
    zygote closed or died) ends it quietly.
    """
    try:
        os.setpgid(0, 0)
    except OSError:
        pass
    prepared = prepare(setup)
    link = ZygoteLink(job_fd, result_fd)
    try:
        full = prepared.error is not None and classify_exception(prepared.error) == ErrorType.OOM
        link.send(NOT_READY if full else READY)
        message = read_message(job_fd)
    except Exception:  # noqa: BLE001 - a broken pipe from the zygote
        message = None
    if not isinstance(message, dict) or "job" not in message:
        shutil.rmtree(setup.sandbox, ignore_errors=True)  # the zygote closed (or died) before a job came
        os._exit(0)
    link.send(JOB_TAKEN)
    prepared.link = link
    waited = max(0.0, prepared.ready_at - float(message.get("sent_at", prepared.ready_at)))
    prepared.durations["waited"] = round(waited, 4)
    if message.get("role") == "reference":
        reference_main(message["job"], job_fd, result_fd, str(message.get("token", "")), prepared)
    if message.get("role") == "judge":
        judge_main(message["job"], job_fd, result_fd, str(message.get("token", "")), prepared)
    child_main(message["job"], result_fd, str(message.get("token", "")), prepared)


def child_main(job: Job, result_fd: int, token: str, prepared: Prepared | None = None) -> NoReturn:
    """Evaluate ``job`` in this process and write the result to ``result_fd``. Never returns.

    ``prepared``: the set-up done before the job arrived (:func:`child_entry`); without it the
    set-up and device initialisation happen here, as part of the compile stage.
    """
    try:
        os.setpgid(0, 0)
    except OSError:
        pass
    marker = b""
    if prepared is not None and prepared.link is not None:
        marker = RESULT
    writer = ResultWriter(result_fd, token, marker)
    result = job.first_result()
    state = ChildState(
        job=job,
        result=result,
        writer=writer,
        sandbox=job.sandbox,
        link=prepared and prepared.link,
        start_rss=prepared.start_rss if prepared is not None else own_rss_bytes(),
    )
    interpreter_memcheck.reset()  # what the zygote's warm-up launched is not this evaluation's
    try:
        _evaluate(state, prepared)
    except StageError as failure:
        # An out-of-bounds attempt the candidate caught outranks what failed after it.
        apply_failure(state, recorded_out_of_bounds(failure) or failure)
    except BaseException as exc:  # noqa: BLE001 - a harness bug must still produce a result
        result.error_type = ErrorType.HARNESS_ERROR
        # The harness's own allocations failing is a full device (neighbours' doing when shared).
        what = HARNESS_OUT_OF_MEMORY if classify_exception(exc) == ErrorType.OOM else "evaluator internal error"
        result.error_message = f"{what}: " + "".join(traceback.format_exception_only(type(exc), exc)).strip()
        result.correct = False
    state.finish()


def _evaluate(state: ChildState, prepared: Prepared | None) -> None:
    """Run the stages in order; a failing stage raises :class:`StageError`."""
    job, result = state.job, state.result
    if prepared is None:
        if job.seed is None:  # the local judge's reference child draws from the same source
            job.seed = int.from_bytes(os.urandom(8), "little")
        prepared = prepare(ChildSetup(job.sandbox, job.backend, job.warm_cache, job.torch_threads))
        # Parts of the compile stage, for latency work (the stage's own entry includes them).
        for key, value in prepared.durations.items():
            result.stage_durations[f"compile.{key}"] = value
    else:
        # Done before the job arrived (not part of this evaluation's time, unless it had to wait:
        # ``compile.waited``).
        for key, value in prepared.durations.items():
            result.stage_durations["compile.waited" if key == "waited" else f"ahead.{key}"] = value
    if prepared.error is not None:
        raise prepared.error
    assert prepared.device is not None
    device = prepared.device
    # The zygote judges on the interpreter; on devices (where shipping outputs of hundreds of MB out
    # as bytes costs seconds per trial) and in a stand-alone child the judge sits in this process.
    if job.judge_in_zygote and state.link is not None:
        state.judge = state.link
    else:
        state.judge = LocalJudgeLink(job, device, lambda: check_snapshot(state.snapshot) if state.snapshot else None)
    mark = PartTimer(result.stage_durations, "compile")
    limit_memory(job)
    result.device = device_name(job.backend)
    torch_globals.capture()  # the settings every call of the reference gets, before any candidate code
    compiled = run_compile(state, device, mark)
    _check_memory_record()
    stage_args = (state, compiled.task_module, compiled.reference, compiled.candidate, device, compiled.rng)
    run_correctness(*stage_args)
    gc.enable()
    check_snapshot(compiled.snapshot)
    _check_memory_record()

    # Timed on their own: the Ascend checks and the cost model are not the candidate's cost.
    state.stage(state.result.stage)
    run_ascend_hooks(*stage_args)
    state.result.stage_durations["ascend_hooks"] = round(time.perf_counter() - state.t_stage, 4)
    state.t_stage = time.perf_counter()
    check_snapshot(compiled.snapshot)
    _check_memory_record()

    if job.measure_performance and (job.backend in ("cuda", "npu") or job.cpu_timing):
        state.stage(Stage.PERFORMANCE)
        run_timing(*stage_args)
        check_snapshot(compiled.snapshot)
        _check_memory_record()
    state.stage(Stage.DONE)


def _check_memory_record() -> None:
    """End the evaluation if the interpreter's memory check recorded an out-of-bounds attempt that
    the candidate's code caught (an uncaught one has already ended it)."""
    failure = recorded_out_of_bounds()
    if failure is not None:
        raise failure
