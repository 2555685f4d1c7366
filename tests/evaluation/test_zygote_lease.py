"""The zygote's quiet-device rule and its side of the device lease (evaluation/zygote.py): what it
waits for before a child times, before it pauses for a neighbour's timing and before it lets go
of the device after a job (exiting children reaped, the judge's memory given back)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from ascend_kernel_gym.evaluation import zygote as zygote_module
from ascend_kernel_gym.evaluation.child_stream import Child
from ascend_kernel_gym.evaluation.device_lease import DeviceLease, LeaseKeeper
from ascend_kernel_gym.evaluation.wire import FREED, READY
from ascend_kernel_gym.evaluation.zygote import Zygote


def _child() -> Child:
    return Child(pid=0, job_fd=-1, result_fd=-1, sandbox="")


def _held_child() -> tuple[int, int]:
    """A forked child that exits only once the returned pipe end is closed: ``(pid, write_fd)``."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # an earlier child still tearing down
        os.close(write_fd)
        os.read(read_fd, 1)
        os._exit(0)
    os.close(read_fd)
    return pid, write_fd


class _FakeTime:
    """The zygote's clock: time passes only in its sleeps; ``on_sleep`` runs at the first one.
    ``real``: each sleep also takes its time (a child's exit then has the wall time its limit
    allows, however loaded the machine)."""

    def __init__(self, on_sleep=None, real: bool = False) -> None:
        self.now = 1000.0
        self.sleeps = 0
        self.on_sleep = on_sleep
        self.real = real

    def perf_counter(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps += 1
        self.now += seconds
        if self.real:
            time.sleep(seconds)
        if self.on_sleep is not None:
            self.on_sleep()
            self.on_sleep = None


def test_quiet_waits_for_the_spare_and_for_exiting_children(tmp_path) -> None:
    zygote = Zygote({"backend": "interpreter", "tmp_root": str(tmp_path)})
    assert zygote._quiet()  # nothing else alive
    zygote.spares = [_child(), _child()]
    zygote.spares[0].ready = True
    assert not zygote._quiet()  # one spare is still initialising its device
    zygote.spares[1].ready = True
    assert zygote._quiet()
    pid, release = _held_child()
    zygote.exiting.append(pid)
    assert not zygote._quiet()  # it cannot have exited: it waits for the pipe
    assert zygote.exiting == [pid]
    os.close(release)
    deadline = time.monotonic() + 120  # only a bound on a hang: the child exits at once
    while not zygote._quiet() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert zygote._quiet() and zygote.exiting == []  # reaped by the zygote
    os.rmdir(zygote.root)


def test_spares_still_starting_are_waited_for_and_paused(tmp_path) -> None:
    # A context starting next to a timing moved the PyTorch references' times by 3-4 %
    # (bench/gpu_quiet_probe.py): a spare still starting is stopped with the job's children.
    zygote = Zygote({"backend": "interpreter", "tmp_root": str(tmp_path)})
    zygote.spares = [Child(pid=202, job_fd=-1, result_fd=-1, sandbox=""), _child()]
    zygote.spares[1].ready = True
    assert not zygote._quiet()
    job_child = Child(pid=101, job_fd=-1, result_fd=-1, sandbox="")
    assert zygote._pausable(job_child, None) == [101, 202]
    os.rmdir(zygote.root)


def _leased_zygote(tmp_path) -> tuple[Zygote, DeviceLease]:
    """A zygote whose job holds the device's lease shared, and another zygote's lease on it."""
    leases = str(tmp_path / "leases")
    zygote = Zygote({"backend": "interpreter", "tmp_root": str(tmp_path), "device_lease": "1", "lease_dir": leases})
    assert zygote.lease is not None
    zygote.keeper = LeaseKeeper(zygote.lease, time.perf_counter)
    assert zygote.keeper.enter(time.perf_counter() + 5, stopped=[])
    return zygote, DeviceLease(zygote.lease.key, leases)


def _judge_spare(pid: int, sandbox: Path) -> tuple[Child, int]:
    """A judging child sent back after its job: ``(child, the write end of its result pipe)``."""
    read_fd, write_fd = os.pipe()
    sandbox.mkdir()
    judge = Child(pid=pid, job_fd=-1, result_fd=read_fd, sandbox=str(sandbox), reference=True)
    judge.ready = judge.freeing = True
    return judge, write_fd


def test_end_job_holds_the_device_until_children_exited_and_the_judge_freed_its_memory(tmp_path, monkeypatch) -> None:
    zygote, timer = _leased_zygote(tmp_path)
    judge, judge_end = _judge_spare(0, tmp_path / "judge")
    zygote.spares = [judge]
    exiting, release = _held_child()
    zygote.exiting.append(exiting)
    seen = {}

    def while_settling() -> None:
        seen["timer_got_in"] = timer.want_exclusive()  # another worker wants to time meanwhile
        os.close(release)

    os.write(judge_end, FREED)
    fake = _FakeTime(on_sleep=while_settling, real=True)
    monkeypatch.setattr(zygote_module, "time", fake)
    zygote.end_job()
    monkeypatch.undo()
    assert seen == {"timer_got_in": False}  # the teardown kept the device held
    assert zygote.exiting == [] and zygote.keeper is None and zygote.lease.state == "free"
    assert zygote.spares == [judge] and not judge.freeing  # kept for the next job, its byte read
    assert timer.want_exclusive()
    os.close(judge_end)
    os.close(judge.result_fd)
    os.rmdir(zygote.root)


def test_end_job_replaces_a_judge_that_does_not_say_it_freed_its_memory(tmp_path) -> None:
    zygote, timer = _leased_zygote(tmp_path)
    pid, release = _held_child()  # stands in for the judging child (killed when discarded)
    judge, judge_end = _judge_spare(pid, tmp_path / "judge")
    zygote.spares = [judge]
    os.write(judge_end, READY)  # not FREED: its pipe is not what the next job expects
    zygote.end_job()
    assert zygote.spares == [] and zygote.exiting == []  # killed and reaped before letting go
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    assert zygote.lease.state == "free" and timer.want_exclusive()
    os.close(release)
    os.close(judge_end)
    os.rmdir(zygote.root)


def test_end_job_replaces_a_judge_that_stays_silent(tmp_path, monkeypatch) -> None:
    zygote, timer = _leased_zygote(tmp_path)
    pid, release = _held_child()  # a judging child that never gets its memory back
    judge, judge_end = _judge_spare(pid, tmp_path / "judge")
    zygote.spares = [judge]
    monkeypatch.setattr(zygote_module, "FREE_MAX_S", 0.2)
    started = time.monotonic()
    zygote.end_job()
    assert time.monotonic() - started >= 0.2  # it was given its time
    assert zygote.spares == [] and zygote.exiting == []
    assert zygote.lease.state == "free" and timer.want_exclusive()
    os.close(release)
    os.close(judge_end)
    os.rmdir(zygote.root)


def test_settle_waits_for_earlier_children(tmp_path, monkeypatch) -> None:
    zygote = Zygote({"backend": "interpreter", "tmp_root": str(tmp_path)})
    pid, release = _held_child()
    fake = _FakeTime(on_sleep=lambda: os.close(release))  # the child can exit only once settle waits
    monkeypatch.setattr(zygote_module, "time", fake)
    zygote.exiting.append(pid)
    zygote._settle(fake.now + 600)
    monkeypatch.undo()
    assert fake.sleeps >= 1 and zygote.exiting == []  # it returned only once the child had exited and was reaped
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    os.rmdir(zygote.root)


def test_settle_gives_up_on_a_child_that_will_not_go_at_the_limit(tmp_path, monkeypatch) -> None:
    zygote = Zygote({"backend": "interpreter", "tmp_root": str(tmp_path)})
    stuck, write_fd = _held_child()  # exits only when the test is done with it
    fake = _FakeTime()
    monkeypatch.setattr(zygote_module, "time", fake)
    zygote.exiting.append(stuck)
    try:
        zygote._settle(fake.now + 0.2)  # the job is not held up past the limit
        assert zygote.exiting == [stuck] and fake.now >= 1000.2
        assert fake.sleeps == pytest.approx(0.2 / 0.002, abs=1)  # polled until the limit, no longer
    finally:
        monkeypatch.undo()
        os.close(write_fd)
        os.waitpid(stuck, 0)
    os.rmdir(zygote.root)
