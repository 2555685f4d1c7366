"""The timed rounds' order of work (evaluation/timing.py, ``_rounds``), on a device stand-in that logs
every load, synchronize, event record, gate and call: where a load may be queued behind the other
model's timed call, and where it must not be.
"""

from __future__ import annotations

import random

import pytest
from fake_clock import FakeClock

from ascend_kernel_gym.evaluation import timing

# --- the second model's load, queued behind the first model's timed call ------------------------------


class RecordingDevice:
    """The CPU stand-in, writing its synchronizes and event records into ``log``."""

    def __init__(self, clock, log: list) -> None:
        self.clock = clock
        self.log = log

    def Event(self, enable_timing: bool = True):
        device = self

        class Event(timing._CpuEvent):
            def record(self) -> None:
                super().record()
                device.log.append(("event",))

        return Event(self.clock)

    def synchronize(self) -> None:
        self.log.append(("sync",))


class LoggingGate:
    """A device gate that writes its arms and releases into ``log``; opens by its limit when
    ``by_limit(last call)`` says so (the last ``("call", name, k)`` in the log)."""

    def __init__(self, log: list, by_limit) -> None:
        self.log = log
        self.by_limit = by_limit

    def arm(self, limit_ms: float) -> None:
        self.log.append(("arm",))

    def release(self) -> None:
        self.log.append(("release",))

    def opened_by_limit(self) -> bool:
        return self.by_limit(next(e[:3] for e in reversed(self.log) if e[0] == "call"))


def _logged(clock: FakeClock, log: list, name: str, ms: float, load_s: float = 0.0):
    """A model whose loads and calls go into ``log``; a call carries the number of the load that made it."""
    import itertools
    import time

    loads = itertools.count()

    def prepare(k: int):
        if k >= 0:
            time.sleep(load_s)
        made_by = next(loads)
        log.append(("load", name, k, made_by))

        def call() -> None:
            log.append(("call", name, k, made_by))
            clock.advance(ms)

        return call

    return prepare


def _queue_protocol(monkeypatch, log: list, reps: int = 8, clean: bool = True, **kwargs):
    """The rounds on a device that writes into ``log`` (num_sets = reps: round r draws set r, timed
    again r + reps), with a ``start_clean`` that logs ``("clean",)`` (``clean``, as the timing
    stage passes one); returns the result and the log from the first timed round's load on."""
    clock = FakeClock()
    monkeypatch.setattr(timing, "device_module", lambda device_type, clock: RecordingDevice(clock, log))
    load_s = kwargs.pop("load_s", 0.0)
    kwargs = dict(audit=lambda k: log.append(("audit", k)), audit_rounds=0, check_rounds=0) | kwargs
    if clean:
        kwargs["start_clean"] = lambda: log.append(("clean",))
    result = timing.time_side_by_side(
        _logged(clock, log, "cand", 4.0, load_s), _logged(clock, log, "ref", 2.0, load_s), device_type="cpu",
        num_sets=reps, reps=reps, warmup=1, rng=random.Random(3), flush_bytes=1 << 12, warmup_s=0.0, clock=clock,
        **kwargs,
    )  # fmt: skip
    first = next(i for i, e in enumerate(log) if e[0] == "load" and e[2] >= 0)
    return result, log[first:]


def _orders(log: list, reps: int) -> list[tuple[str, str]]:
    """Which model was called first in each round."""
    firsts = [next(e[1] for e in log if e[0] == "call" and e[2] % reps == r) for r in range(reps)]
    return [(first, "ref" if first == "cand" else "cand") for first in firsts]


_CLEAN = [("clean",), ("sync",)]


def _window(name: str, k: int, mode: str = timing.STREAM_MODE, clean: bool = True) -> list[tuple]:
    """A timed call from its first synchronize to its end event (the clean start after that
    synchronize, with one more after it)."""
    start = [("sync",), *(_CLEAN if clean else [])]
    if mode == timing.SYNC_MODE:
        return [*start, ("sync",), ("event",), ("call", name, k), ("sync",), ("event",)]
    return [*start, ("event",), ("call", name, k), ("event",)]


def _expected_round(
    first: str, second: str, r: int, queued: bool, checked: bool = False, clean: bool = True
) -> list[tuple]:
    """A round without timed-again calls: the second model's load queued behind the first model's
    call (before its synchronize) or after it, and the untimed checks where they belong."""
    after = [("after", r)] if checked else []
    seq = [("load", first, r), *_window(first, r, clean=clean)]
    if queued:
        seq += [("load", second, r), ("sync",)]
    else:
        seq += [("sync",), *(after if first == "cand" else []), ("load", second, r)]
    seq += [*_window(second, r, clean=clean), ("sync",), *(after if second == "cand" else [])]
    return seq + ([("check", r)] if checked else [])


def _stripped(log: list) -> list[tuple]:
    return [e[:3] for e in log]


def _made_by_last_load(log: list) -> bool:
    """Every call is the one its model's last load before it made."""
    last = {}
    for e in log:
        if e[0] == "load":
            last[e[1]] = e[3]
        elif e[0] == "call" and e[3] != last[e[1]]:
            return False
    return True


@pytest.mark.parametrize("queued_loads", [timing.QUEUED_LOADS, {"cand", "ref"}])
def test_the_second_models_load_is_queued_behind_the_first_ones_window_in_its_round_only(
    monkeypatch, queued_loads
) -> None:
    monkeypatch.setattr(timing, "QUEUED_LOADS", frozenset(queued_loads))
    result, log = _queue_protocol(monkeypatch, [])
    orders = _orders(log, 8)
    assert {first for first, _ in orders} == {"cand", "ref"}  # both orders happen with this seed
    expected = [e for r, (a, b) in enumerate(orders) for e in _expected_round(a, b, r, b in queued_loads)]
    # After the first call's end event and before its synchronize, so outside its window; the next
    # round's set is loaded only once both calls of the round are over (synchronized).
    assert _stripped(log) == expected
    assert _made_by_last_load(log)
    assert result.details["kernel_ms_samples"] == pytest.approx([4.0] * 8)
    assert result.details["ref_ms_samples"] == pytest.approx([2.0] * 8)


def test_the_references_load_is_never_queued_behind_the_candidate() -> None:
    # Work the candidate left running on a side stream (PyTorch operators escape the launch probe)
    # ends only at the device-wide synchronize after its call: the reference's inputs copied
    # before it could be overwritten.
    assert timing.QUEUED_LOADS == {"cand"}


def test_no_load_is_queued_where_the_loads_start_clean_themselves(monkeypatch) -> None:
    # A load that collects garbage itself can run candidate code while the other call still runs.
    _, log = _queue_protocol(monkeypatch, [], clean=False)
    expected = [e for r, (a, b) in enumerate(_orders(log, 8)) for e in _expected_round(a, b, r, False, clean=False)]
    assert _stripped(log) == expected


def test_a_queued_load_counts_as_load_time_not_as_call_time(monkeypatch) -> None:
    result, log = _queue_protocol(monkeypatch, [], reps=6, load_s=0.02)
    assert ("ref", "cand") in _orders(log, 6)  # some rounds queued the candidate's load
    host = result.details["host"]
    assert host["load_s"] >= 2 * 6 * 0.02
    assert host["calls_s"] < 0.02  # the fake calls take no wall time; the queued loads are not theirs


def test_no_load_is_queued_in_checked_or_audited_rounds(monkeypatch) -> None:
    reps = 10
    log: list = []
    _, timed = _queue_protocol(
        monkeypatch, log, reps=reps, audit_rounds=2, check_rounds=3, after_candidate=lambda k: log.append(("after", k)),
        check=lambda k: log.append(("check", k)),
    )  # fmt: skip
    checked = {e[1] for e in timed if e[0] == "check"}
    audited = {e[1] for e in timed if e[0] == "audit"}
    assert audited <= checked and 3 <= len(checked) <= 5
    orders = _orders(timed, reps)
    assert {orders[r][0] for r in checked} == {"cand", "ref"}
    assert any(orders[r][0] == "ref" for r in set(range(reps)) - checked)  # and a queued one
    expected = []
    for r, (a, b) in enumerate(orders):
        expected += _expected_round(a, b, r, queued=b == "cand" and r not in checked, checked=r in checked)
        expected += [("audit", r)] if r in audited else []
    # where the candidate ran first in a checked round, the snapshot check comes before any other
    # harness code, the reference's load with it
    assert _stripped(timed) == expected


def test_synchronized_mode_queues_no_load(monkeypatch) -> None:
    launches = {"n": 0}

    def counter() -> int:
        launches["n"] += 1  # a side-stream launch in the warm-up already
        return launches["n"]

    result, log = _queue_protocol(monkeypatch, [], side_stream_launches=counter)
    assert result.details["mode"] == timing.SYNC_MODE
    expected = []
    for r, (a, b) in enumerate(_orders(log, 8)):
        for name in (a, b):
            expected += [("load", name, r), *_window(name, r, timing.SYNC_MODE), ("sync",)]
    assert _stripped(log)[: len(expected)] == expected
    assert {e[0] for e in log[len(expected) :]} == {"sync", "event"}  # the empty calls' overhead


def test_a_side_stream_launch_in_the_first_call_stops_the_queued_load_and_restarts(monkeypatch) -> None:
    log: list = []
    launches = {"n": 0}
    monkeypatch.setattr(timing, "QUEUED_LOADS", frozenset({"cand", "ref"}))

    def counter() -> int:
        timed = [e for e in log if e[0] == "call" and e[2] >= 0]
        # the first timed call that opened its round launched on a side stream
        if len(timed) % 2 == 1 and launches["n"] == 0:
            launches["n"] = 1
        return launches["n"]

    result, timed = _queue_protocol(monkeypatch, log, side_stream_launches=counter)
    assert result.details["mode"] == timing.SYNC_MODE
    first_call = next(i for i, e in enumerate(timed) if e[0] == "call")
    # the first call's end event, its synchronize, and the synchronized rounds from round 0 on
    assert _stripped(timed[first_call + 1 : first_call + 4]) == [("event",), ("sync",), ("load", timed[0][1], 0)]
    assert len(result.details["kernel_ms_samples"]) == 8


def test_a_queued_load_is_dropped_when_the_first_call_is_timed_again(monkeypatch) -> None:
    """The gate opens by its limit in the reference's first call of every round: in the first three
    rounds (the retry budget) it is timed again on set r + reps, and a candidate load queued behind
    it is dropped; the candidate loads set r again after the reference's kept call. Later rounds
    keep the exposed call, and with it the queued load."""
    monkeypatch.setattr(timing, "CPU_CUSHION_MS", 2.0)
    monkeypatch.setattr(timing, "HOST_RETRY_SHARE", 0.3)
    reps, retried = 10, 3
    log: list = []
    gate = LoggingGate(log, lambda call: call[:2] == ("call", "ref") and call[2] < reps)
    result, timed = _queue_protocol(monkeypatch, log, reps=reps, gate=gate)
    host = result.details["host"]
    assert host["ref_retimed"] == retried and host["ref_exposed_kept"] == reps - retried

    def window(name: str, k: int) -> list[tuple]:
        return [("sync",), *_CLEAN, ("arm",), ("event",), ("call", name, k), ("event",), ("release",)]

    orders = _orders(timed, reps)
    assert {orders[r][0] for r in range(retried)} == {orders[r][0] for r in range(retried, reps)} == {"cand", "ref"}
    expected = []
    for r, (first, _) in enumerate(orders):
        again = [("load", "ref", r + reps), *window("ref", r + reps), ("sync",)] if r < retried else []
        if first == "ref":  # queued after the gate's release; loaded again after the call timed again
            expected += [("load", "ref", r), *window("ref", r), ("load", "cand", r), ("sync",)]
            expected += [*again, ("load", "cand", r)] if again else []
            expected += [*window("cand", r), ("sync",)]
        else:
            expected += [("load", "cand", r), *window("cand", r), ("sync",)]
            expected += [("load", "ref", r), *window("ref", r), ("sync",), *again]
    assert _stripped(timed) == expected
    assert _made_by_last_load(timed)  # never the dropped load's call
    assert [e[2] for e in timed if e[:2] == ("call", "cand")] == list(range(reps))  # once a round, on set r


def test_with_start_clean_every_call_starts_clean_after_a_synchronize(monkeypatch) -> None:
    # The collector runs after the synchronize before each call, with the device synchronized again
    # after it (a finaliser's launches end before the flush), so no load runs it and the candidate's
    # load may be queued behind the reference's call.
    log: list = []
    result, timed = _queue_protocol(monkeypatch, log)
    warm = log[: len(log) - len(timed)]
    calls = [i for i, e in enumerate(warm) if e[0] == "call"]
    assert calls and all(warm[i - 2][0] == "clean" for i in calls)  # warm-up: clean, load, call
    orders = _orders(timed, 8)
    assert {first for first, _ in orders} == {"cand", "ref"}
    expected = [
        e for r, (first, second) in enumerate(orders) for e in _expected_round(first, second, r, second == "cand")
    ]
    assert _stripped(timed) == expected
    assert ("clean",) in _window("cand", 0) and _made_by_last_load(timed)
    assert result.details["kernel_ms_samples"] == pytest.approx([4.0] * 8)
