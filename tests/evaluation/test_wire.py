"""The wire protocol between the pool, the zygote and its children (evaluation/wire.py)."""

from __future__ import annotations

import json
import os
import threading

import pytest

from ascend_kernel_gym.evaluation import wire


@pytest.fixture
def pipe():
    read_fd, write_fd = os.pipe()
    yield read_fd, write_fd
    for fd in (read_fd, write_fd):
        try:
            os.close(fd)
        except OSError:
            pass


def test_messages_round_trip_through_a_pipe_and_end_with_none(pipe) -> None:
    read_fd, write_fd = pipe
    big = {"job": "x" * (3 << 20), "n": [1, 2.5, None]}  # larger than a pipe buffer: written by a thread
    writer = threading.Thread(target=lambda: [wire.write_message(write_fd, m) for m in ({"a": 1}, big)])
    writer.start()
    assert wire.read_message(read_fd) == {"a": 1}
    assert wire.read_message(read_fd) == big
    writer.join()
    os.close(write_fd)
    assert wire.read_message(read_fd) is None  # end of file


def test_a_message_cut_short_reads_as_none(pipe) -> None:
    read_fd, write_fd = pipe
    data = wire.encode_message({"job": 1})
    assert data[: wire.HEADER.size] == wire.HEADER.pack(len(data) - wire.HEADER.size)
    os.write(write_fd, data[:-1])
    os.close(write_fd)
    assert wire.read_message(read_fd) is None


def test_result_framing_round_trips_and_checks_the_token() -> None:
    data = wire.encode_result("tok", {"stage": "done", "correct": True})
    assert data[: wire.HEADER.size] == wire.HEADER.pack(len(data) - wire.HEADER.size)
    assert json.loads(data[wire.HEADER.size :]) == {"token": "tok", "result": {"stage": "done", "correct": True}}
    assert wire.decode_result(data, "tok") == {"stage": "done", "correct": True}
    assert wire.decode_result(bytearray(data), "tok") == {"stage": "done", "correct": True}
    assert all(wire.decode_result(data[:cut], "tok") is None for cut in range(len(data)))  # incomplete
    # complete but not this job's result: the child's stream is broken (the harness never writes it)
    deep = b'{"token": "tok", "result": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    for bad in (data, wire.frame(b"not json"), wire.frame(b'{"token": "tok", "result": 3}'), wire.frame(b'["tok"]')):
        token = "other" if bad is data else "tok"  # the first: forged by another child
        with pytest.raises(wire.WireError):
            wire.decode_result(bad, token)
    with pytest.raises(wire.WireError, match="RecursionError"):
        wire.decode_result(wire.frame(deep), "tok")


def test_control_bytes_are_distinct_single_bytes() -> None:
    controls = [wire.READY, wire.JOB_TAKEN, wire.QUIET, wire.GO, wire.RESULT]
    assert all(len(c) == 1 for c in controls) and len(set(controls)) == len(controls)


def test_wait_quiet_asks_the_zygote_and_reports_its_answer() -> None:
    job_read, job_write = os.pipe()
    result_read, result_write = os.pipe()
    try:
        link = wire.ZygoteLink(job_read, result_write)
        os.write(job_write, b"x" + wire.GO)  # a stray byte is not an answer
        seconds, granted = link.wait_quiet()
        assert granted and seconds >= 0
        assert os.read(result_read, 16) == wire.QUIET
        os.close(job_write)  # the zygote went away: no wait, and no grant
        job_write = -1
        assert link.wait_quiet()[1] is False
    finally:
        for fd in (job_read, job_write, result_read, result_write):
            if fd >= 0:
                os.close(fd)


def test_no_backend_lets_the_candidates_child_judge_itself_by_default() -> None:
    from ascend_kernel_gym.evaluation.wire import DEFAULT_JUDGE, JUDGE_MODES

    assert set(DEFAULT_JUDGE) == {"interpreter", "cuda", "npu"}
    assert all(mode in JUDGE_MODES and mode != "child" for mode in DEFAULT_JUDGE.values())
