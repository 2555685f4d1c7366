"""The device gate of the timing stage (``evaluation/device_gate.py``) and its use by the rounds."""

from __future__ import annotations

import random

import pytest
import torch
from fake_clock import FakeClock

from ascend_kernel_gym.evaluation import device_gate, timing


class FakeGate:
    """Arms and releases like the device gate; opens by its limit on the arms ``by_limit`` picks."""

    def __init__(self, by_limit) -> None:
        self.by_limit = by_limit
        self.arms: list[float] = []
        self.released = 0
        self.events: list[str] = []

    def arm(self, limit_ms: float) -> None:
        self.arms.append(limit_ms)
        self.events.append("arm")

    def release(self) -> None:
        self.released += 1
        self.events.append("release")

    def opened_by_limit(self) -> bool:
        return self.by_limit(len(self.arms))


def _gated(monkeypatch, gate: FakeGate, reps: int = 6):
    monkeypatch.setattr(timing, "CPU_CUSHION_MS", 2.0)
    clock = FakeClock()

    def model(name: str, ms: float):
        def prepare(k: int):
            def call() -> None:
                gate.events.append(name)
                clock.now += ms / 1e3

            return call

        return prepare

    result = timing.time_side_by_side(
        model("cand", 3.0), model("ref", 5.0), lambda k: None, device_type="cpu", num_sets=3, reps=reps, warmup=1,
        audit_rounds=0, rng=random.Random(0), flush_bytes=1 << 12, warmup_s=0.0, clock=clock, gate=gate,
    )  # fmt: skip
    return result


def test_every_timed_call_is_gated_and_released_after_it_returned(monkeypatch) -> None:
    gate = FakeGate(lambda n: False)
    result = _gated(monkeypatch, gate)
    assert result.details["gated"] is True
    assert len(gate.arms) == gate.released == 2 * 6  # each timed call of each model, and no other
    assert set(gate.arms) == {2.0}  # the gate waits at most the cushion's length
    timed = gate.events[gate.events.index("arm") :]
    for i in range(0, len(timed), 3):  # arm, the model's call, release
        assert timed[i] == "arm" and timed[i + 1] in ("cand", "ref") and timed[i + 2] == "release"
    assert result.kernel_ms == pytest.approx(3.0) and result.ref_ms == pytest.approx(5.0)
    assert result.details["host"]["kernel_retimed"] == result.details["host"]["ref_retimed"] == 0


def test_a_call_whose_gate_opened_by_its_limit_is_timed_again_on_fresh_inputs(monkeypatch) -> None:
    # The gate opening by its limit means the host's part outran it: the window may hold idle
    # device time, so the call is timed again (as a call that outran the cushion).
    gate = FakeGate(lambda n: n in (1, 5))
    result = _gated(monkeypatch, gate)
    host = result.details["host"]
    assert host["kernel_retimed"] + host["ref_retimed"] == 2
    assert len(gate.arms) == 2 * 6 + 2
    assert len(result.details["kernel_ms_samples"]) == len(result.details["ref_ms_samples"]) == 6


def test_no_gate_off_cuda_or_when_switched_off(monkeypatch) -> None:
    monkeypatch.setattr(device_gate, "_configured", None)
    monkeypatch.setenv(device_gate.ENV, "1")
    device_gate.prepare(torch.device("cpu"))
    assert device_gate.ready() == (None, "not on cpu")
    monkeypatch.setenv(device_gate.ENV, "0")
    device_gate.prepare(torch.device("cuda"))
    gate, why = device_gate.ready()
    assert gate is None and "off" in why and device_gate.ENV in why
    monkeypatch.delenv(device_gate.ENV)  # on by default: only a device without one leaves it out
    assert device_gate.wanted()
    if not torch.cuda.is_available():
        device_gate.prepare(torch.device("cuda"))
        gate, why = device_gate.ready()
        assert gate is None and "off" not in why


def test_the_zygotes_setting_outranks_the_environment(monkeypatch) -> None:
    """The zygote and its children run with a cleaned environment: the caller's setting reaches
    them through the zygote's configuration (evaluation/pool.py), which its children inherit."""
    monkeypatch.setattr(device_gate, "_configured", None)
    monkeypatch.setenv(device_gate.ENV, "0")
    device_gate.configure("1")
    monkeypatch.delenv(device_gate.ENV)
    assert device_gate.wanted()
    device_gate.prepare(torch.device("cpu"))
    assert device_gate.ready() == (None, "not on cpu")  # asked for, so it got as far as the device
    device_gate.configure("0")
    monkeypatch.setenv(device_gate.ENV, "1")
    assert not device_gate.wanted()
    device_gate.configure("")
    assert device_gate.wanted() is device_gate.DEFAULT_ON


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_the_gate_holds_the_stream_until_released_and_opens_by_its_limit(monkeypatch) -> None:
    monkeypatch.setenv(device_gate.ENV, "1")
    device_gate.prepare(torch.device("cuda"))
    assert device_gate.ready()[1] == ""  # made and checked
    gate = device_gate.DeviceGate(torch.device("cuda"))
    gate.check()  # raises if the stream ran past an unreleased gate, or a gate never opened by itself
    gate.arm(2000.0)
    assert not torch.cuda.current_stream().query()  # held
    gate.release()
    torch.cuda.synchronize()
    assert not gate.opened_by_limit()
