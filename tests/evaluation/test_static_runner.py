"""The static stage in a helper process, under a time limit (evaluation/static_runner.py)."""

from __future__ import annotations

import os
import resource
import signal
import warnings
from pathlib import Path

import pytest

from ascend_kernel_gym.evaluation import ErrorType, EvalRequest, Evaluator, Stage, static_runner
from ascend_kernel_gym.evaluation import evaluator as evaluator_module
from ascend_kernel_gym.evaluation import static as static_module
from ascend_kernel_gym.evaluation.static import check_source
from ascend_kernel_gym.evaluation.static_runner import (
    MAX_SOURCE_CHARS,
    StaticRunner,
    check_source_bounded,
    report_from_dict,
    report_to_dict,
)

REDTEAM = Path(__file__).parent / "redteam"
HONEST = (REDTEAM / "legit_namedtuple_kernel_arg.py").read_text()


def attribute_chains(size: int = 100_000, depth: int = 100) -> str:
    """Issue 21's static-stage bomb: ``size`` characters of deep attribute chains."""
    lines = ["import torch\n"]
    i = 0
    while sum(map(len, lines)) < size:
        lines.append(f"v{i} = torch" + ".a" * depth + "\n")
        i += 1
    return "".join(lines)


@pytest.fixture
def runner():
    run = StaticRunner()
    yield run
    run.close()


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def test_the_helper_gives_the_same_report_as_the_static_stage(runner) -> None:
    forbidden = HONEST + "\nimport os\n"
    for code in (HONEST, forbidden, "def broken(:\n", "", "x = '\ud800'\n"):
        here, there = check_source(code), runner.check(code)
        assert report_to_dict(there) == report_to_dict(here), code[:40]
    assert runner.check(forbidden).error_type == ErrorType.FORBIDDEN


def test_the_check_runs_in_the_helper_not_in_the_caller(runner, monkeypatch) -> None:
    def refuse(code: str):
        raise AssertionError("the static stage ran in the calling process")

    monkeypatch.setattr(static_module, "check_source", refuse)
    monkeypatch.setattr(static_runner, "check_source", refuse)
    report = runner.check(HONEST)
    assert report.ok and report.kernels


def test_a_check_past_its_limit_is_a_static_timeout_and_the_helper_is_replaced(runner) -> None:
    bomb = attribute_chains()
    cpu_before = _cpu_seconds()
    report = runner.check(bomb, timeout_s=0.05)
    # The caller only wrote 100 KB to a pipe and waited: the parse and the checks ran elsewhere
    # (in this process they take about a second of CPU).
    assert _cpu_seconds() - cpu_before < 0.5
    assert report.error_type == ErrorType.TIMEOUT and not report.ok
    assert "did not finish within 0.05 s" in report.message()
    assert runner.timeouts == 1
    again = runner.check(HONEST)  # a fresh helper
    assert again.ok, again.message()


def test_a_source_over_the_size_limit_is_refused_without_a_helper(runner, monkeypatch) -> None:
    def no_helper() -> None:
        raise AssertionError("a helper was started for an oversized source")

    monkeypatch.setattr(runner, "_acquire", no_helper)
    report = runner.check("#" * (MAX_SOURCE_CHARS + 1))
    assert report.error_type == ErrorType.TIMEOUT and "too large to check" in report.message()


def test_a_dead_helper_is_a_static_failure_and_an_idle_dead_one_is_replaced(runner, monkeypatch) -> None:
    assert runner.check(HONEST).ok
    (idle,) = runner._idle
    os.kill(idle.proc.pid, signal.SIGKILL)
    idle.proc.wait()
    assert runner.check(HONEST).ok  # the dead idle helper was dropped, a new one answered
    monkeypatch.setattr(static_runner, "BOOTSTRAP", "import sys; sys.exit(3)")
    runner.close()
    fresh = StaticRunner()
    try:
        report = fresh.check(HONEST)
    finally:
        fresh.close()
    assert report.error_type == ErrorType.SYNTAX and "exit status 3" in report.message()


def test_without_a_helper_the_check_runs_here_with_one_warning(runner, monkeypatch) -> None:
    def cannot_start() -> None:
        raise static_runner.HelperError("could not start the static checker's process: EAGAIN")

    monkeypatch.setattr(runner, "_acquire", cannot_start)
    with pytest.warns(RuntimeWarning, match="without its time limit"):
        assert runner.check(HONEST).ok
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert runner.check(HONEST + "\nimport os\n").error_type == ErrorType.FORBIDDEN


def test_the_time_limit_comes_from_the_environment(monkeypatch) -> None:
    monkeypatch.setenv(static_runner.TIMEOUT_ENV, "2.5")
    assert static_runner.default_timeout_s() == 2.5
    for bad in ("-1", "soon", "0"):
        monkeypatch.setenv(static_runner.TIMEOUT_ENV, bad)
        assert static_runner.default_timeout_s() == static_runner.DEFAULT_TIMEOUT_S


def test_reports_round_trip() -> None:
    report = check_source(HONEST + "\nimport os\n")
    assert report_to_dict(report_from_dict(report_to_dict(report))) == report_to_dict(report)


def test_the_evaluator_uses_the_bounded_check_and_a_timeout_is_not_a_hack(monkeypatch, relu_task) -> None:
    assert evaluator_module.check_source is check_source_bounded
    monkeypatch.setenv(static_runner.TIMEOUT_ENV, "0.05")
    ev = Evaluator(backend="interpreter", workers=1, start=False, cache=False)
    try:
        result = ev.evaluate(EvalRequest(task=relu_task, code=attribute_chains()))
    finally:
        ev.close()
    assert result.stage == Stage.STATIC and result.format_ok and not result.static_ok
    assert result.error_type == ErrorType.TIMEOUT and not result.hack and result.hack_reasons == []
    assert "static check did not finish" in result.error_message


def test_a_forked_process_starts_its_own_helpers(runner) -> None:
    """The idle helpers' pipes belong to the process that started them; a fork must not share them."""
    assert runner.check(HONEST).ok and len(runner._idle) == 1
    parent_helper = runner._idle[0]
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            report = runner.check(HONEST + "\nimport os\n")
            own = runner._idle and runner._idle[0] is not parent_helper
            os.write(write_fd, f"{report.error_type.value} {bool(own)}".encode())
        finally:
            os._exit(0)
    os.close(write_fd)
    answer = os.read(read_fd, 100).decode()
    os.close(read_fd)
    os.waitpid(pid, 0)
    assert answer == "forbidden True"
    assert runner._idle == [parent_helper] and runner.check(HONEST).ok  # the parent's helper is untouched


def test_the_hack_mark_of_each_violation_survives_the_helper(runner) -> None:
    """Issue 22: an unused forbidden import is refused without being a hack, also across the helper."""
    unused = HONEST + "\nimport os\n"
    used = HONEST + "\nimport os\nCWD = os.getcwd()\n"
    assert not check_source(unused).hack and check_source(used).hack
    for code in (unused, used):
        there = runner.check(code)
        assert there.hack == check_source(code).hack
        assert report_from_dict(report_to_dict(there)).hack == there.hack
    legacy = report_to_dict(check_source(used))
    for violation in legacy["violations"]:
        del violation["hack"]  # an answer without the mark counts every violation
    assert report_from_dict(legacy).hack
