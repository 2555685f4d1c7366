"""The zygote's reply for one evaluation: the candidate child's result with what the judge decided,
or, for a child cut for time, the stage it was in and the trials it passed.

Imports torch lazily (through the judge): only the zygote imports this module.
"""

from __future__ import annotations

from typing import Any

from ascend_kernel_gym.evaluation.child_stream import ChildStream
from ascend_kernel_gym.evaluation.device_lease import LeaseKeeper
from ascend_kernel_gym.evaluation.memory_book import CANDIDATE_PHASES, MIB


def final_reply(run: ChildStream, job: Any, judge: Any, keeper: LeaseKeeper | None = None) -> dict[str, Any] | None:
    """The evaluation's result: the candidate child's, with what the judge decided."""
    from ascend_kernel_gym.evaluation.errors import record_failure
    from ascend_kernel_gym.evaluation.judge import merge_final, timing_check
    from ascend_kernel_gym.evaluation.result import bound_result

    reply = run.reply()
    failure = run.failure  # set by the judge, or by the zygote for a broken stream
    # A result (or a trial's partial result) that does not read as an EvalResult was not written
    # by the harness: the child's code wrote it.
    parsed = _parsed(reply) if reply is not None else None
    if reply is not None and parsed is None:
        reply, failure = None, failure or _forged()
    partial = _parsed(run.partial) if run.partial is not None else None
    if run.partial is not None and partial is None:
        run.partial, failure = None, failure or _forged()
    if (
        failure is None
        and reply is None
        and judge is not None
        and judge.reference_failure is not None
        and not run.reason
    ):
        failure = judge.reference_failure  # the candidate's child was ended because of it
    if reply is None and run.reason == "timeout" and run.taken:
        return timeout_reply(run, job, judge)
    if failure is not None:
        result = partial if partial is not None else parsed if parsed is not None else job.first_result()
        result.trials_passed = judge.passed
        record_failure(result, failure)
        run.failure = failure
        _note_reference_memory(result, judge)
        return bound_result(result).to_dict()
    if parsed is None:
        return None
    result = parsed
    if judge is not None:  # otherwise the child judged itself (device backends)
        merge_final(result, judge)
    if any(claim is not None for claim in (result.speedup, result.kernel_ms, result.ref_ms)):
        # The timed calls ran after the quiet-device request and after the judge's last verdict,
        # and before the child said they were over (or, if it did not, before its result).
        starts = [t for t in (run.quiet_at, run.judged_at) if t is not None]
        end = run.timed_at if run.timed_at is not None else run.done_at
        window = end - max(starts) if starts and end is not None else None
        asked = bool(getattr(job, "measure_performance", True))
        result.timing["cross_check"] = timing_check(
            result, window, judge.out_bytes if judge is not None else 0, asked=asked
        )
        if keeper is not None:
            result.timing["device_lease"] = {
                "held": run.lease_at is not None,
                "waited_s": round(keeper.waited_s, 4),
                "paused_s": round(keeper.paused_s, 4),
                # CLOCK_MONOTONIC seconds (one clock for every process of the host): from the
                # go-ahead to the end of the timed calls (or the result); the spans of one
                # device's timings never overlap
                "span": [run.go_at, end],
            }
    _note_reference_memory(result, judge)
    # Bounded here as well: a child that got past its own cap cannot send a huge result on.
    return bound_result(result).to_dict()


def _note_reference_memory(result: Any, judge: Any) -> None:
    """Keep the candidate's child's reports of its own peak device memory (in all, and per phase)
    only where they are plain numbers, and add the judging reference child's (in all, building
    the plan, judging: its reports, which the candidate's child cannot write)."""
    memory = result.device_memory_mb if isinstance(result.device_memory_mb, dict) else {}
    result.device_memory_mb = {}
    for key in ("candidate", *(f"candidate_{phase}" for phase in CANDIDATE_PHASES)):
        claimed = memory.get(key)
        if isinstance(claimed, (int, float)) and not isinstance(claimed, bool) and 0 <= claimed < 1e9:
            result.device_memory_mb[key] = float(claimed)
    for key, attribute in (
        ("reference", "device_bytes"),
        ("reference_plan", "plan_bytes"),
        ("reference_judging", "judging_bytes"),
    ):
        reported = getattr(judge, attribute, None)
        if isinstance(reported, int):
            result.device_memory_mb[key] = round(reported / MIB, 1)


def timeout_reply(run: ChildStream, job: Any, judge: Any) -> dict[str, Any]:
    """The result of a child cut for time: the stage it was in and the trials it passed."""
    from ascend_kernel_gym.evaluation.result import ErrorType, EvalResult, Stage, bound_result

    result = EvalResult.from_dict(run.partial) if run.partial is not None else job.first_result()
    passed = judge.passed if judge is not None else run.trials_done
    result.correct = False
    result.trials_passed = min(passed, job.num_trials)
    result.trials_total = job.num_trials
    result.error_type = ErrorType.TIMEOUT
    if run.go_at is not None or run.quiet_at is not None:
        result.stage, result.compiled = Stage.PERFORMANCE, True
        where = "in the timing stage (every correctness trial passed)"
    elif passed >= job.num_trials:
        result.stage, result.compiled = Stage.CORRECTNESS, True
        where = "after the correctness trials"
    elif run.in_correctness or passed:
        result.stage = Stage.CORRECTNESS
        result.compiled = result.compiled or passed > 0
        where = f"in correctness trial {passed + 1} of {job.num_trials}"
    else:
        result.stage = Stage.COMPILE
        where = "while importing and constructing ModelNew"
    if run.stalled_s is not None:
        result.error_message = (
            f"no progress for {run.stalled_s:.0f} s {where} (an infinite loop, or a kernel far slower than the "
            "reference: the limit is a floor plus a multiple of the reference's own time)"
        )
    else:
        result.error_message = f"the evaluation did not finish within its time limit ({where})"
    _note_reference_memory(result, judge)
    return bound_result(result).to_dict()


def _parsed(data: dict[str, Any]) -> Any:
    """``data`` as an :class:`.EvalResult`, or None when it does not read as one."""
    from ascend_kernel_gym.evaluation.result import EvalResult

    try:
        return EvalResult.from_dict(data)
    except Exception:  # noqa: BLE001 - whatever a forged result makes the parser raise
        return None


def _forged() -> Any:
    from ascend_kernel_gym.evaluation.errors import StageError
    from ascend_kernel_gym.evaluation.result import ErrorType

    return StageError(ErrorType.SANDBOX_VIOLATION, "sandbox: your code sent the harness a result it did not write")
