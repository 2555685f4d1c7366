"""What the zygote sees of one evaluation child: its pipes, and the stream it writes on them.

A child writes single control bytes (:mod:`.wire`), trial payloads (the candidate's child) and
finally its result: a JSON result message, or a payload from the reference child.
:class:`ChildStream` parses that stream whatever the chunking. No torch here: the zygote uses it
before and without any tensor work.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from typing import Any

from ascend_kernel_gym.evaluation.wire import (
    HEADER,
    JOB_TAKEN,
    NOT_READY,
    PLAN,
    QUIET,
    READY,
    RESULT,
    STARTED,
    TIMED,
    TRIAL,
    TRIAL_DONE,
    WireError,
    decode_result,
    split_payload,
)

#: the largest result message a child may send (children cap theirs at ``result.MAX_RESULT_BYTES``)
MAX_RESULT_MESSAGE = 16 << 20
#: the largest JSON header a trial message may announce
MAX_TRIAL_HEADER = 16 << 20


def rss_bytes(pid: int) -> int:
    """The largest resident set in the process tree of ``pid``.

    In the OS sandbox's PID namespace the zygote's child is only a relay; the evaluation (and
    its memory) is its child.
    """
    largest = 0
    seen: set[int] = set()
    todo = [pid]
    while todo and len(seen) < 64:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        try:
            with open(f"/proc/{current}/status") as handle:
                for line in handle:
                    if line.startswith("VmRSS:"):
                        largest = max(largest, int(line.split()[1]) * 1024)
                        break
            with open(f"/proc/{current}/task/{current}/children") as handle:
                todo += [int(child) for child in handle.read().split()]
        except (OSError, ValueError):
            continue
    return largest


@dataclass
class Child:
    """A forked evaluation child, seen from the zygote."""

    pid: int
    job_fd: int  # the zygote writes the job (and later GO) here
    result_fd: int  # the child writes its control bytes and its result here
    sandbox: str
    #: READY seen (or its pipe closed): it no longer starts a device context
    ready: bool = False
    #: NOT_READY seen: its device could not be set up (the device was full); never handed a job
    unusable: bool = False
    #: forked for a reference's job (no Triton warm-up: ready sooner)
    reference: bool = False
    #: evaluations it judged before this one (a judging reference child serves several)
    jobs: int = 0
    #: a judging child sent back to wait for its next job, whose :data:`.wire.FREED` (its device
    #: memory given back) the zygote has not read yet
    freeing: bool = False
    #: the zygote's read-only descriptor of the child's ``output.txt``, opened before the fork: the
    #: printed output is read through it, never by path (a candidate can put a link there)
    output_fd: int = -1

    def mark_ready(self, byte: bytes) -> None:
        """The child said READY or NOT_READY (or its pipe closed: ``b""``): it starts no context now."""
        self.ready = True
        self.unusable = byte == NOT_READY


def harness_failure(message: str, timeout: bool = False, oom: bool = False) -> Any:
    from ascend_kernel_gym.evaluation.errors import StageError
    from ascend_kernel_gym.evaluation.result import ErrorType

    kind = ErrorType.TIMEOUT if timeout else ErrorType.OOM if oom else ErrorType.HARNESS_ERROR
    return StageError(kind, message)


class ChildStream:
    """What one child has written on its result pipe so far: control bytes, trial payloads (the
    candidate's child), then its result (a JSON result, or a payload from the reference child)."""

    def __init__(self, child: Child, token: str, payload_result: bool = False) -> None:
        self.child = child
        self.token = token
        self.payload_result = payload_result
        self.taken = False
        self.quiet_asked = False
        #: when the zygote came to hold the device's lease alone for the child's timing
        #: (:mod:`.device_lease`; None: no lease, or it timed without one)
        self.lease_at: float | None = None
        #: when the zygote let it time
        self.go_at: float | None = None
        #: when the child asked for a quiet device (it times right after): the start of the timing window
        self.quiet_at: float | None = None
        #: when the child said its timed calls were over (after ``quiet_at``): the window's end
        self.timed_at: float | None = None
        self.plan_asked = False
        self.pending = bytearray()  # bytes not parsed yet (before the result)
        self.in_trial = False
        #: complete trial payloads not judged yet: (header, body)
        self.trials: list[tuple[dict[str, Any], bytes]] = []
        self.result_bytes: bytearray | None = None  # from RESULT on
        self.garbled = False
        self.status: int | None = None
        self.reason = ""
        #: the judge's failure of a trial, and the child's result as it stood then
        self.failure: Any = None
        self.partial: dict[str, Any] | None = None
        #: the job message (the reference child's, kept for one restart) and whether it was restarted
        self.message: dict[str, Any] | None = None
        self.retried = False
        #: a reference child with a deferred plan was told to build it (:data:`.wire.BUILD_PLAN`)
        self.plan_started = False
        #: when the judge last answered a trial, and when the result arrived (the timing window)
        self.judged_at: float | None = None
        self.done_at: float | None = None
        #: the progress watchdog: when the child last made progress, whether it reached the
        #: correctness stage, and the trials it says it finished
        self.progress_at: float | None = None
        self.in_correctness = False
        self.trials_done = 0
        #: set when the watchdog cut it: the seconds without progress it was allowed
        self.stalled_s: float | None = None
        #: the most bytes one trial message's body may announce (the judge's bound, from the
        #: reference's outputs); a child announcing more is garbled, before the zygote buffers it
        self.trial_limit: int | None = None
        #: why a trial message was refused for its size (the evaluation then fails with it)
        self.oversized = ""
        #: the zygote sent the trial plan: trial messages may come from then on
        self.plan_sent = False
        self._reply: dict[str, Any] | None = None

    def feed(self, chunk: bytes) -> None:
        if self.result_bytes is not None:
            if not self.payload_result and len(self.result_bytes) + len(chunk) > MAX_RESULT_MESSAGE:
                self.garbled = True  # a child caps its own result far below this: it was not the harness
                return
            self.result_bytes += chunk
            return
        self.pending += chunk
        while self.pending and self.result_bytes is None:
            if self.in_trial:
                try:
                    self._check_trial_sizes()
                    parsed = split_payload(self.pending)
                except WireError:
                    parsed, self.garbled = None, True
                if self.garbled:
                    self.result_bytes = bytearray()
                    return
                if parsed is None:
                    return
                used, header, body = parsed
                del self.pending[:used]
                self.trials.append((header, body))
                self.in_trial = False
                continue
            byte = bytes(self.pending[:1])
            del self.pending[:1]
            if byte in (READY, NOT_READY):
                self.child.mark_ready(byte)
            elif byte == JOB_TAKEN:
                self.taken = True
                self.progress_at = time.perf_counter()
            elif byte == STARTED and self.taken:
                self.progress_at = time.perf_counter()
                self.in_correctness = True
            elif byte == TRIAL_DONE and self.taken:
                self.progress_at = time.perf_counter()
                self.trials_done += 1
            elif byte == QUIET:
                self.quiet_asked = True
                self.quiet_at = time.perf_counter()
            elif byte == TIMED and self.quiet_at is not None and self.timed_at is None:
                self.timed_at = time.perf_counter()
            elif byte == PLAN and self.taken:
                self.plan_asked = True
            elif byte == TRIAL and self.taken and self.plan_sent:
                self.in_trial = True  # (before the plan, no trial is asked for: a broken stream below)
            else:  # RESULT; anything else is a broken stream, and no result will be accepted
                self.garbled = byte != RESULT
                self.result_bytes = bytearray(self.pending)
                self.pending.clear()

    def _check_trial_sizes(self) -> None:
        """Refuse a trial message whose announced header or body is larger than allowed."""
        if len(self.pending) < HEADER.size:
            return
        (head,) = HEADER.unpack(self.pending[: HEADER.size])
        if head > MAX_TRIAL_HEADER:
            raise WireError("a trial header larger than allowed")
        at = HEADER.size + head
        if self.trial_limit is not None and len(self.pending) >= at + HEADER.size:
            (body,) = HEADER.unpack(self.pending[at : at + HEADER.size])
            if body > self.trial_limit:
                self.oversized = (
                    f"the trial's tensors are {body} bytes, far more than the reference's (at most "
                    f"{self.trial_limit} are accepted): check the shape of the output"
                )
                raise WireError(self.oversized)

    def reply(self) -> dict[str, Any] | None:
        """The child's result, once complete, well-formed and carrying the job's token (a complete
        message that is not one makes the stream garbled)."""
        if not self.taken or self.garbled or self.result_bytes is None or self.payload_result:
            return None
        if self._reply is not None:
            return self._reply
        try:
            reply = decode_result(self.result_bytes, self.token)
        except WireError:
            self.garbled = True
            return None
        self._reply = reply
        return reply

    def payload(self) -> tuple[dict[str, Any], bytes] | None:
        """The reference child's payload, once complete, well-formed and carrying the job's token."""
        if not self.taken or self.garbled or self.result_bytes is None or not self.payload_result:
            return None
        try:
            parsed = split_payload(self.result_bytes)
        except WireError:
            return None
        if parsed is None or parsed[1].get("token") != self.token:
            return None
        return parsed[1], parsed[2]


def die_with_parent(parent: int) -> None:
    """In a freshly forked child: be killed when the zygote dies (a zygote that crashed in the middle
    of a job must not leave its children running unwatched, without limits)."""
    try:
        from ascend_kernel_gym.evaluation.os_sandbox_calls import PR_SET_PDEATHSIG, prctl

        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except Exception:  # noqa: BLE001, S110 - no prctl here: the zygote's shutdown still kills it
        pass
    if os.getppid() != parent:  # the zygote died before the death signal was set
        os._exit(70)


def name_process(name: str) -> None:
    """Give this process a name ``ps`` and ``top`` show (``akg-candidate``, ``akg-reference``, ...:
    at most 15 bytes), so an evaluator's processes can be told apart; nothing happens where the
    name cannot be set."""
    try:
        with open("/proc/self/comm", "w") as handle:
            handle.write(name[:15])
    except OSError:
        pass


#: why a child whose messages to the zygote broke the protocol failed
GARBLED_STREAM = (
    "sandbox: your code wrote to the harness's result pipe (a message the harness never sends: a malformed "
    "result, a trial nobody asked for, a stray byte)"
)


def read_output_tail(fd: int, cap: int) -> str:
    """The last ``cap`` bytes a child printed, read through the descriptor the zygote opened on its
    ``output.txt`` before the fork (whatever the candidate put at that path since)."""
    if fd < 0:
        return ""
    try:
        size = os.fstat(fd).st_size
        return os.pread(fd, cap, max(0, size - cap)).decode("utf-8", errors="replace")
    except OSError:
        return ""
