"""The zygote's side of the child protocol: the result-pipe stream and the quiet-device rule."""

from __future__ import annotations

import json
import os
import time

import pytest

from ascend_kernel_gym.evaluation.zygote import (
    _HEADER,
    JOB_TAKEN,
    QUIET,
    READY,
    RESULT,
    Zygote,
    _Child,
    _Run,
)


def _framed(token: str, result: dict) -> bytes:
    payload = json.dumps({"token": token, "result": result}).encode()
    return RESULT + _HEADER.pack(len(payload)) + payload


def _child() -> _Child:
    return _Child(pid=0, job_fd=-1, result_fd=-1, sandbox="")


@pytest.mark.parametrize("chunk", [1, 3, 7, 1 << 20])
def test_stream_is_parsed_across_any_chunking(chunk: int) -> None:
    child = _child()
    run = _Run(child, "tok")
    # A result whose length prefix starts with the QUIET byte must not be taken for a request.
    body = {"stage": "done", "pad": ""}
    while _HEADER.pack(len(_framed("tok", body)) - 1 - _HEADER.size)[:1] != QUIET:
        body["pad"] += "x"
    stream = READY + JOB_TAKEN + QUIET + _framed("tok", body)
    seen_quiet = False
    for start in range(0, len(stream), chunk):
        assert run.reply() is None  # incomplete until the last byte
        run.feed(stream[start : start + chunk])
        seen_quiet = seen_quiet or run.quiet_asked
    assert child.ready and run.taken and seen_quiet
    assert run.reply() == body


def test_stream_rejects_a_forged_or_unframed_result() -> None:
    forged = _Run(_child(), "tok")
    forged.feed(JOB_TAKEN + _framed("other", {"correct": True}))
    assert forged.taken and forged.reply() is None
    unframed = _Run(_child(), "tok")
    payload = json.dumps({"token": "tok", "result": {}}).encode()
    unframed.feed(JOB_TAKEN + _HEADER.pack(len(payload)) + payload)  # no RESULT marker
    assert unframed.reply() is None
    not_taken = _Run(_child(), "tok")
    not_taken.feed(_framed("tok", {}))  # a result without the job ever being taken
    assert not not_taken.taken and not_taken.reply() is None


def test_quiet_waits_for_the_spare_and_for_exiting_children(tmp_path) -> None:
    zygote = Zygote({"backend": "interpreter", "tmp_root": str(tmp_path)})
    assert zygote._quiet()  # nothing else alive
    zygote.spare = _child()
    assert not zygote._quiet()  # the spare is still initialising its device
    zygote.spare.ready = True
    assert zygote._quiet()
    pid = os.fork()
    if pid == 0:  # an earlier child still tearing down
        time.sleep(0.3)
        os._exit(0)
    zygote.exiting.append(pid)
    assert not zygote._quiet()
    deadline = time.monotonic() + 10
    while not zygote._quiet() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert zygote._quiet() and zygote.exiting == []  # reaped
    os.rmdir(zygote.root)


def test_settle_waits_for_earlier_children_up_to_a_limit(tmp_path) -> None:
    zygote = Zygote({"backend": "interpreter", "tmp_root": str(tmp_path)})
    pid = os.fork()
    if pid == 0:  # a finished child still tearing down its device context
        time.sleep(0.6)
        os._exit(0)
    zygote.exiting.append(pid)
    zygote._settle(time.perf_counter() + 60)
    assert zygote.exiting == []  # waited for it: the child has exited and was reaped
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    stuck = os.fork()
    if stuck == 0:
        time.sleep(600)
        os._exit(0)
    zygote.exiting.append(stuck)
    zygote._settle(time.perf_counter() + 0.2)  # a child that will not go: the job is not held up past the limit
    # _settle returned while the child still runs (it sleeps far longer than any load could stretch 0.2 s).
    assert zygote.exiting == [stuck] and os.waitpid(stuck, os.WNOHANG) == (0, 0)
    os.kill(stuck, 9)
    os.waitpid(stuck, 0)
    os.rmdir(zygote.root)
