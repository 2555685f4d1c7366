"""The timing stage's own parts (evaluation/timing_stage.py): where the checked rounds' outputs
wait for the end of the timed calls, and when the reference's rounding slack is asked for."""

from __future__ import annotations

import torch

from ascend_kernel_gym.evaluation import timing_stage
from ascend_kernel_gym.evaluation.process import own_rss_bytes
from ascend_kernel_gym.evaluation.timing_stage import KeptOutputs, host_allowance, matches_reference

MIB = 1024 * 1024


def test_copies_go_to_the_device_then_to_host_memory_then_are_compared_at_once() -> None:
    out = torch.arange(1024, dtype=torch.float32)  # 4 KiB
    keeper = KeptOutputs(torch.device("cpu"), device_bytes=2 * out.nbytes, host_bytes=out.nbytes, rerun_s=1.0)
    kept = [keeper.keep(out) for _ in range(4)]
    assert keeper.summary() == {"device": 2, "host": 1, "at_once": 1}
    assert kept[3] is None  # fits nowhere: the caller compares it in its round
    out.fill_(-1.0)  # a later call writing into the same tensor changes no copy
    for copy in kept[:3]:
        back = KeptOutputs.back(copy)
        assert isinstance(back, torch.Tensor) and back.device == out.device
        assert torch.equal(back, torch.arange(1024, dtype=torch.float32))


def test_a_structured_output_keeps_its_structure_through_host_memory() -> None:
    a, b = torch.ones(3), torch.zeros(2, 2)
    keeper = KeptOutputs(torch.device("cpu"), device_bytes=0, host_bytes=MIB, rerun_s=1.0)
    copy = keeper.keep((a, [b, None]))
    a.add_(1.0)
    back = KeptOutputs.back(copy)
    assert isinstance(back, tuple) and isinstance(back[1], list) and back[1][1] is None
    assert torch.equal(back[0], torch.ones(3)) and torch.equal(back[1][0], torch.zeros(2, 2))
    assert keeper.summary() == {"device": 0, "host": 1, "at_once": 0}


def test_host_memory_takes_the_copies_whose_check_would_hold_the_device_longer() -> None:
    gib = 1 << 30
    slow = KeptOutputs(torch.device("cpu"), device_bytes=0, host_bytes=64 * gib, rerun_s=0.1)  # a decoder block
    cheap = KeptOutputs(torch.device("cpu"), device_bytes=0, host_bytes=64 * gib, rerun_s=0.003)  # elementwise
    assert slow.worth_host(64 * MIB) and slow.worth_host(128 * MIB)
    assert not slow.worth_host(1024 * MIB)  # 0.5 s to copy: more than the check
    assert not cheap.worth_host(256 * MIB)  # a copy to host memory costs more than the check
    assert cheap.worth_host(MIB)
    assert cheap.keep(torch.zeros(64 * MIB // 4)) is None and cheap.summary()["at_once"] == 1


def test_the_host_allowance_follows_the_cap_and_what_the_child_grew() -> None:
    start = own_rss_bytes()
    assert start > 0  # Linux: /proc/self/statm
    assert host_allowance(0, start) == 0  # no cap: nothing is kept in host memory
    assert host_allowance(4096, 0) == 0  # no reading of the start: nothing either
    before = host_allowance(4096, start)
    assert 0 < before <= timing_stage.KEEP_HOST_SHARE * 4096 * MIB
    grown = torch.ones(64 * MIB, dtype=torch.uint8)  # 64 MiB, touched
    after = host_allowance(4096, start)
    assert before - after >= timing_stage.KEEP_HOST_SHARE * 48 * MIB
    assert host_allowance(32, start) == 0  # grew past a 32 MB cap already
    del grown


def test_the_slack_is_asked_for_only_when_the_plain_tolerance_refuses() -> None:
    ref = torch.zeros(8)
    asked: list[int] = []

    def slack_of(value: float | None):
        def slack():
            asked.append(1)
            return None if value is None else [torch.full((8,), value)]

        return slack

    assert matches_reference(ref + 1e-6, ref, 1e-4, 1e-4, slack_of(0.5))
    assert not asked  # close without it: no reference call in float32
    assert matches_reference(ref + 0.1, ref, 1e-4, 1e-4, slack_of(0.5))  # within the reference's own error
    assert len(asked) == 1
    assert not matches_reference(ref + 0.1, ref, 1e-4, 1e-4, slack_of(None))  # no slack: refused
    assert not matches_reference(ref + 2.0, ref, 1e-4, 1e-4, slack_of(0.5))  # beyond it: refused


def test_copies_are_kept_in_what_the_judge_left_idle_less_what_the_timing_stage_holds_more(monkeypatch) -> None:
    from types import SimpleNamespace

    from ascend_kernel_gym.evaluation import placement, timing_stage
    from ascend_kernel_gym.evaluation.timing import FLUSH_BYTES

    gib = 1 << 30
    monkeypatch.setattr(placement, "free_memory", lambda device: 40 * gib)
    monkeypatch.setattr(timing_stage, "device_reserved_bytes", lambda backend: 3 * gib)

    def state(keep: int, correctness: int | None) -> SimpleNamespace:
        job = SimpleNamespace(device_share=0.125, keep_device_bytes=keep, memory_mb=0)
        phases = {} if correctness is None else {"correctness": correctness}
        return SimpleNamespace(job=job, start_rss=0, memory_phases=phases)

    device = torch.device("cpu")
    rule = int(timing_stage.KEEP_DEVICE_SHARE * 40 * gib * 0.125)  # half a GiB: the share of the free memory
    assert KeptOutputs.for_stage(state(0, 2 * gib), device, 0.0).device_bytes == rule
    # the judge's 4 GiB, less the 1 GiB and the flush buffer this child holds beyond its trials' peak
    kept = KeptOutputs.for_stage(state(4 * gib, 2 * gib), device, 0.0).device_bytes
    assert kept == 3 * gib - FLUSH_BYTES
    assert KeptOutputs.for_stage(state(4 * gib, 8 * gib), device, 0.0).device_bytes == 4 * gib  # holds less now
    assert KeptOutputs.for_stage(state(100 * gib, 8 * gib), device, 0.0).device_bytes == 20 * gib  # half the free
    assert KeptOutputs.for_stage(state(gib, None), device, 0.0).device_bytes == rule  # nothing idle left: the rule
