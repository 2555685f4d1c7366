"""The zygote's side of the judge in the reference child (:mod:`.reference_judge`).

:class:`RemoteJudge` stands where :class:`.judge.Judge` stands for the interpreter: the zygote
hands it the reference child's first message (the plan, or the reference's failure), asks it for
the plan the candidate's child gets, and passes it each trial message of the candidate's child.
It forwards the trial (header and body, as the child sent them) on the reference child's job
pipe and waits for the verdict on its result pipe, up to the evaluation's deadline; what the
judge counted (trials passed, largest errors, output bytes) comes back with every verdict. A
judge that dies, garbles its answer or does not answer in time ends the evaluation as the
harness's failure, never as a pass.

Plain bytes and JSON only (no torch): the zygote imports this module.
"""

from __future__ import annotations

import json
import time
from typing import Any

from ascend_kernel_gym.evaluation.child_stream import ChildStream, harness_failure
from ascend_kernel_gym.evaluation.errors import StageError, Verdict, stage_error_from
from ascend_kernel_gym.evaluation.result import ErrorType
from ascend_kernel_gym.evaluation.wire import HEADER, read_exact, write_all

#: the most bytes one verdict message may have
MAX_VERDICT_BYTES = 1 << 20


class RemoteJudge:
    """The correctness verdict of one evaluation, decided in its reference child."""

    def __init__(self, num_trials: int, deadline: float) -> None:
        self.num_trials = num_trials
        self.deadline = deadline
        self.stream: ChildStream | None = None
        self.reference_failure: StageError | None = None
        self.slowest_ref_s = 0.0
        self.passed = 0
        self.max_abs = 0.0
        self.max_rel = 0.0
        self.out_bytes = 0
        #: elements the judge let through as strays (:class:`.compare.Strays`)
        self.strays = 0
        #: the most device memory the judge reported reserving for this evaluation (None: no report)
        self.device_bytes: int | None = None
        #: the same, apart: building the plan, and judging the trials after it (None: no report)
        self.plan_bytes: int | None = None
        self.judging_bytes: int | None = None
        self._plan: dict[str, Any] | None = None
        self._trial_limit: int | None = None
        #: every trial sent got its whole verdict back: the judge waits for the next trial, so it
        #: can end this evaluation and take another (False once an answer was missing or garbled)
        self._in_step = True

    def attach(self, stream: ChildStream | None) -> None:
        """The reference child's stream (its pipes are read at each use: a restart replaces them)."""
        self.stream = stream

    @property
    def ready(self) -> bool:
        return self._plan is not None or self.reference_failure is not None

    @property
    def trials(self) -> list[int]:
        return list(range(self.num_trials)) if self._plan is not None else []

    @property
    def done(self) -> bool:
        return self._plan is not None and self.passed >= self.num_trials

    @property
    def reusable(self) -> bool:
        """The judge sent its plan and answered every trial in full: it can serve another job."""
        return self._plan is not None and self._in_step

    def plan(self) -> dict[str, Any]:
        return dict(self._plan or {})

    def trial_bytes_limit(self) -> int | None:
        """The judge's bound on one trial message's tensor bytes (None: it sent none)."""
        return self._trial_limit

    def _note_device_bytes(self, message: dict[str, Any], plan: bool) -> None:
        value = message.get("device_bytes")
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            self.device_bytes = max(self.device_bytes or 0, value)
            if plan:
                self.plan_bytes = value
            else:
                self.judging_bytes = max(self.judging_bytes or 0, value)

    def load_reference(self, header: dict[str, Any], body: bytes) -> None:
        """The reference child's first message: the plan, or the failure of the task's reference."""
        self._note_device_bytes(header, plan=True)
        error = header.get("error")
        if isinstance(error, dict):
            self.reference_failure = stage_error_from(error, 2000)
            return
        plan = header.get("plan")
        if not isinstance(plan, dict) or not isinstance(plan.get("trials"), list):
            self.reference_failure = StageError(ErrorType.HARNESS_ERROR, "the judge sent no plan")
            return
        if len(plan["trials"]) != self.num_trials:
            self.reference_failure = StageError(ErrorType.HARNESS_ERROR, "the judge's plan has the wrong trial count")
            return
        self._plan = plan
        try:
            self.slowest_ref_s = max(0.0, float(header.get("slowest_ref_s") or 0.0))
            self._trial_limit = max(0, int(header.get("trial_bytes_limit") or 0)) or None
        except (TypeError, ValueError):
            self.slowest_ref_s, self._trial_limit = 0.0, None

    def judge(self, header: dict[str, Any], body: bytes) -> Verdict:
        """Forward one trial of the candidate's child and return the judge's verdict."""
        stream = self.stream
        if stream is None or self._plan is None:
            return Verdict("fail", harness_failure("the judge is not running"))
        head = json.dumps(header).encode()
        self._in_step = False
        try:
            write_all(stream.child.job_fd, HEADER.pack(len(head)), head, HEADER.pack(len(body)), body)
        except OSError:
            return Verdict("fail", harness_failure("the judge (the reference child) went away"))
        message = self._read_verdict(stream.child.result_fd)
        if isinstance(message, StageError):
            return Verdict("fail", message)
        self._note_device_bytes(message, plan=False)
        try:
            self.passed = int(message["passed"])
            self.max_abs = float(message["max_abs"])
            self.max_rel = float(message["max_rel"])
            self.out_bytes = int(message["out_bytes"])
            self.strays = max(0, int(message.get("strays") or 0))
            action = str(message["action"])
            failure = _failure(message.get("failure"))
        except (KeyError, TypeError, ValueError):
            return Verdict("fail", harness_failure("the judge's verdict is unreadable"))
        if action not in ("continue", "probe", "fail") or (action == "fail") != (failure is not None):
            return Verdict("fail", harness_failure("the judge's verdict is unreadable"))
        self._in_step = True
        return Verdict(action, failure)

    def _read_verdict(self, fd: int) -> dict[str, Any] | StageError:
        def gone() -> StageError:
            if time.perf_counter() >= self.deadline:
                return harness_failure("the judge did not answer within the time limit", timeout=True)
            return harness_failure("the judge (the reference child) ended without a verdict")

        head = read_exact(fd, HEADER.size, self.deadline, time.perf_counter)
        if head is None:
            return gone()
        (size,) = HEADER.unpack(head)
        if size > MAX_VERDICT_BYTES:
            return harness_failure("the judge's verdict is too large")
        raw = read_exact(fd, size, self.deadline, time.perf_counter)
        if raw is None:
            return gone()
        try:
            message = json.loads(raw)
        except ValueError:
            message = None
        if not isinstance(message, dict):
            return harness_failure("the judge's verdict is unreadable")
        return message


def _failure(data: Any) -> StageError | None:
    if data is None:
        return None
    if not isinstance(data, dict) or "type" not in data or "message" not in data:
        raise ValueError("a failure needs a type and a message")
    return stage_error_from(data)
