"""The wire protocol between the pool, the zygote and its children (plain bytes; no torch).

Two framings, both an 8-byte little-endian length (:data:`HEADER`) followed by the payload:

- *messages* between harness processes (pool <-> zygote, zygote -> child): pickled objects
  (:func:`write_message`, :func:`read_message`); both ends are harness code;
- the child's one *result* (child -> zygote): :data:`RESULT`, then a length-prefixed JSON object
  ``{"token": ..., "result": ...}`` (:func:`encode_result`, :func:`decode_result`). JSON, never
  pickle: the bytes come from a process that ran candidate code.

Before its result a child writes single control bytes on its result pipe, in this order:
:data:`READY` (set up, device initialised), :data:`JOB_TAKEN` (read its job; before any
candidate code runs), :data:`QUIET` (before timing: asks that no other child of its worker is
starting or tearing down a device context; answered with :data:`GO` on its job pipe), and
:data:`TIMED` (the timed calls are over: the zygote gives the device's lease back; the checks
that follow need no quiet device).

The correctness stage talks to the judge (:mod:`.judge`, in the zygote) over the same pipes: the
candidate's child writes :data:`PLAN` and reads its trial plan (a framed pickle, harness to
child), then per trial writes :data:`TRIAL` and a payload (:mod:`.tensor_wire`: a framed JSON
header and a framed body of raw tensor bytes), and reads one byte: :data:`CONTINUE`, or
:data:`PROBE` (send the output on the probe inputs). A failed trial gets no answer: the zygote
ends the child. The reference child's result is :data:`RESULT` and a payload; one whose plan is
deferred first reads :data:`BUILD_PLAN` (build it now) or :data:`END_OF_JOB` (not needed) on its
job pipe.
"""

from __future__ import annotations

import json
import os
import pickle
import select
import struct
import time
from collections.abc import Callable
from typing import Any

HEADER = struct.Struct("<Q")
READY = b"R"
#: a child forked ahead of its job (a spare) could not set its device up because the device was
#: full, its neighbours' doing: the zygote forks a fresh child for the job instead of handing it
#: one that can only fail (an evaluation run alone after an out-of-memory once got such a spare
#: and ended as the harness's error, eight workers on an H100, 2026-12-06)
NOT_READY = b"N"
JOB_TAKEN = b"J"
QUIET = b"Q"
GO = b"G"
TIMED = b"E"
#: written to a judging reference child where its next trial would come: the evaluation is over
#: (an empty trial header); it then waits for its next job (:mod:`.reference_judge`)
END_OF_JOB = HEADER.pack(0)
#: what a judging reference child writes on its result pipe after :data:`END_OF_JOB`, once it has
#: given its cached device memory back: the zygote holds the device until then, since freeing
#: device memory next to a neighbour's timing slows the neighbour's PyTorch calls (a reference's
#: timing by up to 55 %, ``bench/gpu_quiet_probe.py``)
FREED = b"F"
#: written to a reference child whose job defers its plan (:attr:`.job.Job.defer_plan`), once the
#: candidate's child asks for the plan: a trial header no zygote writes (its length is the largest)
BUILD_PLAN = HEADER.pack((1 << 64) - 1)
#: the most evaluations one judging reference child serves before the zygote replaces it
JUDGE_MAX_JOBS = 64
#: the file in a child's sandbox that its stdout and stderr go to (the zygote opens it before the fork)
OUTPUT_FILENAME = "output.txt"
RESULT = b"M"
PLAN = b"P"
TRIAL = b"T"
CONTINUE = b"C"
PROBE = b"B"
#: progress of the candidate's child (the zygote's progress watchdog, :data:`WATCHDOG_FLOOR_S`):
#: STARTED once it enters the correctness stage or finished compiling a kernel, TRIAL_DONE after a trial
STARTED = b"K"
TRIAL_DONE = b"D"
#: the longest a child waits for a quiet device before timing anyway
#: where an evaluation's verdict can be decided (see ``zygote.Zygote.judge_mode``)
JUDGE_MODES = ("zygote", "reference", "child")
#: where each backend's verdict is decided by default (``AKG_JUDGE`` overrides)
DEFAULT_JUDGE = {"interpreter": "zygote", "cuda": "reference", "npu": "reference"}
#: what each judge mode means, for reports (``akg doctor``)
JUDGE_TEXT = {
    "zygote": "the zygote, on plain bytes copied out of the candidate's child",
    "reference": "the reference child, on its own copy of the outputs (cuda: handed over by CUDA IPC handle; "
    "otherwise sent as bytes)",
    "child": "the candidate's own child: no process boundary, a compromised child can forge its verdict",
}
QUIET_MAX_S = 10.0
#: the longest a zygote waits for another zygote's timing on the same device (:mod:`.device_lease`),
#: before a job starts and before its own timing; its children's stopped time is added to their limits
LEASE_EXTRA_MAX_S = 45.0
#: the longest a candidate's child may go without progress (compile done, a trial done) before its
#: timing starts, per backend, plus WATCHDOG_REF_FACTOR x the reference's slowest call in the plan;
#: the evaluation's own time limit stays the ceiling
WATCHDOG_FLOOR_S = {"interpreter": 45.0, "cuda": 25.0, "npu": 25.0}
WATCHDOG_REF_FACTOR = {"interpreter": 2000.0, "cuda": 500.0, "npu": 500.0}


def frame(payload: bytes) -> bytes:
    """``payload`` behind its length header."""
    return HEADER.pack(len(payload)) + payload


def encode_message(message: Any) -> bytes:
    """A framed pickle of ``message`` (harness to harness only)."""
    return frame(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))


def write_all(fd: int, *parts: bytes | memoryview) -> None:
    """Write ``parts`` to ``fd`` one after the other, each whole (blocking; no joined copy)."""
    for part in parts:
        view = memoryview(part).cast("B")
        while view:
            view = view[os.write(fd, view) :]


def write_message(fd: int, message: Any) -> None:
    """Write one framed message to ``fd`` (blocking until all of it is written)."""
    write_all(fd, encode_message(message))


def read_message(fd: int) -> Any:
    """Read one framed message from ``fd``; None at end of file."""
    header = read_exact(fd, HEADER.size)
    if header is None:
        return None
    (size,) = HEADER.unpack(header)
    payload = read_exact(fd, size)
    if payload is None:
        return None
    return pickle.loads(payload)  # noqa: S301 - both ends are the harness


def await_plan_start(fd: int) -> bool | None:
    """In a reference child whose plan is deferred: wait on its job pipe for :data:`BUILD_PLAN`
    (True), :data:`END_OF_JOB` (False: the evaluation ended before it needed the reference) or
    anything else, end of file included (None: the zygote is gone or the pipe is out of step)."""
    frame_bytes = read_exact(fd, HEADER.size)
    if frame_bytes == BUILD_PLAN:
        return True
    return False if frame_bytes == END_OF_JOB else None


def read_exact(
    fd: int, size: int, deadline: float | None = None, clock: Callable[[], float] = time.monotonic
) -> bytes | None:
    """Exactly ``size`` bytes from ``fd``, or None if it ends first, or (with a ``deadline``)
    once ``clock()`` passes it (the caller tells the two apart by its clock)."""
    chunks = []
    remaining = size
    while remaining:
        if deadline is not None:
            left = deadline - clock()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], min(left, 1.0))
            if not ready:
                continue
        chunk = os.read(fd, min(remaining, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def encode_result(token: str, result: dict[str, Any]) -> bytes:
    """The framed JSON result message (without the :data:`RESULT` marker in front)."""
    return frame(json.dumps({"token": token, "result": result}).encode())


def decode_result(data: bytes | bytearray, token: str) -> dict[str, Any] | None:
    """The result in ``data`` (what followed the :data:`RESULT` marker), once complete and
    well-formed and carrying ``token``; None while incomplete.

    Raises:
        WireError: complete but not a result (not JSON, nested too deeply to parse, another token).
    """
    if len(data) < HEADER.size:
        return None
    (size,) = HEADER.unpack(data[: HEADER.size])
    if len(data) < HEADER.size + size:
        return None
    try:
        message = json.loads(bytes(data[HEADER.size : HEADER.size + size]))
    except (ValueError, RecursionError, MemoryError) as exc:
        raise WireError(f"the result message is not well-formed JSON ({type(exc).__name__})") from None
    if not isinstance(message, dict) or message.get("token") != token or not isinstance(message.get("result"), dict):
        raise WireError("the result message does not carry this job's result")
    return message["result"]


class WireError(ValueError):
    """A value that cannot be shipped, or a payload that is not well-formed."""


def split_payload(data: bytes | bytearray) -> tuple[int, dict[str, Any], bytearray] | None:
    """``(bytes used, header, body)`` of the first complete payload in ``data``; None until complete.

    Raises :class:`WireError` for a header that is not a JSON object.
    """
    if len(data) < HEADER.size:
        return None
    (head_size,) = HEADER.unpack(data[: HEADER.size])
    body_at = HEADER.size + head_size
    if len(data) < body_at + HEADER.size:
        return None
    (body_size,) = HEADER.unpack(data[body_at : body_at + HEADER.size])
    end = body_at + HEADER.size + body_size
    if len(data) < end:
        return None
    try:
        header = json.loads(bytes(data[HEADER.size : body_at]))
    except ValueError as exc:
        raise WireError(f"payload header is not JSON: {exc}") from None
    if not isinstance(header, dict):
        raise WireError("payload header is not an object")
    return end, header, bytearray(data[body_at + HEADER.size : end])


class ZygoteLink:
    """A forked child's side of its two pipes to the zygote."""

    def __init__(self, job_fd: int, result_fd: int) -> None:
        self.job_fd = job_fd
        self.result_fd = result_fd

    def send(self, control: bytes) -> None:
        os.write(self.result_fd, control)

    def request_plan(self) -> Any:
        """Ask the judge for the trial plan and wait for it (None if the zygote went away)."""
        self.send(PLAN)
        try:
            return read_message(self.job_fd)
        except Exception:  # noqa: BLE001 - a broken pipe
            return None

    def send_trial(self, parts: list[memoryview | bytes]) -> bytes:
        """Send one trial payload (its pieces, :func:`.tensor_wire.encode_payload_parts`) and wait for
        the judge's answer byte (empty if none comes)."""
        try:
            write_all(self.result_fd, TRIAL, *parts)
            return os.read(self.job_fd, 1)
        except OSError:
            return b""

    def timing_over(self) -> None:
        """Say the timed calls are over (the zygote lets go of the device's lease)."""
        try:
            self.send(TIMED)
        except OSError:
            pass

    def wait_quiet(self) -> tuple[float, bool]:
        """Ask for a quiet device (no sibling starting or ending a context).

        Returns the seconds waited and whether the zygote granted it (False: no answer within
        :data:`QUIET_MAX_S`, :data:`LEASE_EXTRA_MAX_S` and a second, or the zygote went away).
        """
        started = time.perf_counter()
        granted = False
        try:
            self.send(QUIET)
            deadline = started + QUIET_MAX_S + LEASE_EXTRA_MAX_S + 1.0
            while (left := deadline - time.perf_counter()) > 0:
                ready, _, _ = select.select([self.job_fd], [], [], left)
                if ready:
                    answer = os.read(self.job_fd, 1)
                    if answer in (GO, b""):
                        granted = answer == GO
                        break
        except OSError:
            pass
        return round(time.perf_counter() - started, 4), granted
