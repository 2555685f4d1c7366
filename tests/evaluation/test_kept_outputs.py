"""The checked rounds' outputs of the timing stage (evaluation/kept_outputs.py): what is kept of
them, where it waits for the end of the timed calls, how it is compared with the reference's
whole output, and when the reference's rounding slack is asked for."""

from __future__ import annotations

import torch

from ascend_kernel_gym.evaluation import kept_outputs
from ascend_kernel_gym.evaluation.kept_outputs import (
    SAMPLE_ELEMENTS,
    KeptOutputs,
    Sample,
    host_allowance,
    kept_matches,
    matches_reference,
)
from ascend_kernel_gym.evaluation.process import own_rss_bytes

MIB = 1024 * 1024


def test_copies_go_to_the_device_then_to_host_memory_then_are_compared_at_once() -> None:
    out = torch.arange(1024, dtype=torch.float32)  # 4 KiB
    keeper = KeptOutputs(torch.device("cpu"), device_bytes=2 * out.nbytes, host_bytes=out.nbytes, rerun_s=1.0)
    kept = [keeper.keep(out) for _ in range(4)]
    assert keeper.summary() == {"agreed": 0, "device": 2, "host": 1, "at_once": 1, "sampled": 0}
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
    assert keeper.summary() == {"agreed": 0, "device": 0, "host": 1, "at_once": 0, "sampled": 0}


def test_host_memory_takes_the_copies_whose_check_would_hold_the_device_longer() -> None:
    gib = 1 << 30
    slow = KeptOutputs(torch.device("cpu"), device_bytes=0, host_bytes=64 * gib, rerun_s=0.1)  # a decoder block
    cheap = KeptOutputs(torch.device("cpu"), device_bytes=0, host_bytes=64 * gib, rerun_s=0.003)  # elementwise
    assert slow.worth_host(64 * MIB) and slow.worth_host(128 * MIB)
    assert not slow.worth_host(1024 * MIB)  # 0.5 s to copy: more than the check
    assert not cheap.worth_host(256 * MIB)  # a copy to host memory costs more than the check
    assert cheap.worth_host(MIB)
    assert cheap.keep(torch.zeros(256 * 1024, dtype=torch.float64)) is not None  # 2 MiB, whole: to host memory
    nowhere = KeptOutputs(torch.device("cpu"), device_bytes=0, host_bytes=0, rerun_s=0.003)
    assert nowhere.keep(torch.zeros(64 * MIB // 4)) is None
    # compared whole, at once
    assert nowhere.summary() == {"agreed": 0, "device": 0, "host": 0, "at_once": 1, "sampled": 0}


def test_the_host_allowance_follows_the_cap_and_what_the_child_grew() -> None:
    start = own_rss_bytes()
    assert start > 0  # Linux: /proc/self/statm
    assert host_allowance(0, start) == 0  # no cap: nothing is kept in host memory
    assert host_allowance(4096, 0) == 0  # no reading of the start: nothing either
    before = host_allowance(4096, start)
    assert 0 < before <= kept_outputs.KEEP_HOST_SHARE * 4096 * MIB
    grown = torch.ones(64 * MIB, dtype=torch.uint8)  # 64 MiB, touched
    after = host_allowance(4096, start)
    assert before - after >= kept_outputs.KEEP_HOST_SHARE * 48 * MIB
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

    from ascend_kernel_gym.evaluation import placement
    from ascend_kernel_gym.evaluation.timing import FLUSH_BYTES

    gib = 1 << 30
    monkeypatch.setattr(placement, "free_memory", lambda device: 40 * gib)
    monkeypatch.setattr(kept_outputs, "device_reserved_bytes", lambda backend: 3 * gib)

    def state(keep: int, correctness: int | None) -> SimpleNamespace:
        job = SimpleNamespace(device_share=0.125, keep_device_bytes=keep, memory_mb=0)
        phases = {} if correctness is None else {"correctness": correctness}
        return SimpleNamespace(job=job, start_rss=0, memory_phases=phases)

    device = torch.device("cpu")
    rule = int(kept_outputs.KEEP_DEVICE_SHARE * 40 * gib * 0.125)  # half a GiB: the share of the free memory
    assert KeptOutputs.for_stage(state(0, 2 * gib), device, 0.0, 0).device_bytes == rule
    # the judge's 4 GiB, less the 1 GiB and the flush buffer this child holds beyond its trials' peak
    kept = KeptOutputs.for_stage(state(4 * gib, 2 * gib), device, 0.0, 0).device_bytes
    assert kept == 3 * gib - FLUSH_BYTES
    assert KeptOutputs.for_stage(state(4 * gib, 8 * gib), device, 0.0, 0).device_bytes == 4 * gib  # holds less now
    assert KeptOutputs.for_stage(state(100 * gib, 8 * gib), device, 0.0, 0).device_bytes == 20 * gib  # half the free
    assert KeptOutputs.for_stage(state(gib, None), device, 0.0, 0).device_bytes == rule  # nothing idle left: the rule


def test_a_large_output_is_kept_as_a_sample_that_later_writes_do_not_change() -> None:
    out = torch.randn(16 * SAMPLE_ELEMENTS)
    whole = out.clone()
    keeper = KeptOutputs(torch.device("cpu"), device_bytes=64 * MIB, host_bytes=0, seed=7)
    kept = keeper.keep(out)
    assert isinstance(kept, Sample) and kept.values.numel() == SAMPLE_ELEMENTS
    assert keeper.summary() == {"agreed": 0, "device": 1, "host": 0, "at_once": 0, "sampled": 1}
    assert keeper.on_device < out.nbytes // 4  # the places and the values, not the whole tensor
    boundary = torch.zeros(3 * SAMPLE_ELEMENTS)  # float32: a sample (12 bytes an element) is no smaller
    assert isinstance(keeper.keep(boundary), torch.Tensor)
    out.fill_(0.0)  # the next call writes into the same tensor
    back = KeptOutputs.back(kept)
    assert kept_matches(back, whole, 1e-6, 1e-6, lambda: None)
    assert not kept_matches(back, out, 1e-6, 1e-6, lambda: None)


def test_a_sample_catches_a_share_of_wrong_elements_and_any_change_of_shape_or_dtype() -> None:
    ref = torch.randn(2048, 1024)
    keeper = KeptOutputs(torch.device("cpu"), device_bytes=MIB * 256, host_bytes=0, seed=1)
    wrong = ref.clone()
    wrong.view(-1)[torch.randperm(ref.numel())[: ref.numel() // 1000]] += 1.0  # one element in a thousand
    assert not kept_matches(KeptOutputs.back(keeper.keep(wrong)), ref, 1e-4, 1e-4, lambda: None)
    same = KeptOutputs.back(keeper.keep(ref.clone()))
    assert kept_matches(same, ref, 1e-4, 1e-4, lambda: None)
    assert not kept_matches(same, ref.reshape(1024, 2048), 1e-4, 1e-4, lambda: None)  # same elements, other shape
    assert not kept_matches(same, ref.double(), 1e-4, 1e-4, lambda: None)
    assert not kept_matches(same, (ref,), 1e-4, 1e-4, lambda: None)
    half = KeptOutputs.back(keeper.keep(ref.half()))  # a cheaper dtype in a timed call
    assert not kept_matches(half, ref, 1.0, 1.0, lambda: None)


def test_the_places_come_from_the_harness_seed_not_from_torch_global_generator() -> None:
    out = torch.randn(4 * SAMPLE_ELEMENTS)

    def places(seed: int, global_seed: int) -> torch.Tensor:
        torch.manual_seed(global_seed)  # what a candidate's code may set
        kept = KeptOutputs(torch.device("cpu"), device_bytes=64 * MIB, host_bytes=0, seed=seed).keep(out)
        assert isinstance(kept, Sample)
        return kept.index

    assert torch.equal(places(3, 0), places(3, 12345))
    assert not torch.equal(places(3, 0), places(4, 0))


def test_a_sample_through_host_memory_and_its_slack_stay_in_step_with_the_reference_output() -> None:
    small, big = torch.ones(8), torch.zeros(4 * SAMPLE_ELEMENTS)
    ref = (small, big, None, 2.0)
    cand = (small.clone(), big + 0.1, None, 2.0)
    keeper = KeptOutputs(torch.device("cpu"), device_bytes=0, host_bytes=64 * MIB, rerun_s=1.0, seed=5)
    kept = keeper.keep(cand)
    assert keeper.summary() == {"agreed": 0, "device": 0, "host": 1, "at_once": 0, "sampled": 1}
    back = KeptOutputs.back(kept)
    assert isinstance(back, tuple) and isinstance(back[1], Sample) and back[2] is None
    asked: list[int] = []

    def slack(entries):
        def of():
            asked.append(1)
            return entries

        return of

    # one slack entry per tensor of the reference, depth first (the scalar counts, None does not)
    assert kept_matches(back, ref, 1e-4, 1e-4, slack([None, torch.full_like(big, 0.5), None]))
    assert asked == [1]
    assert not kept_matches(back, ref, 1e-4, 1e-4, slack([torch.full_like(small, 0.5), None, None]))
    assert not kept_matches(back, ref, 1e-4, 1e-4, slack(None))


def test_an_output_that_agrees_with_the_rounds_reference_output_needs_no_copy() -> None:
    keeper = KeptOutputs(torch.device("cpu"), device_bytes=0, host_bytes=0, seed=3)
    ref = torch.linspace(-1.0, 1.0, 4096)
    assert keeper.agrees(ref + 1e-6, ref, 1e-4, 1e-4)
    assert keeper.agrees((ref.clone(), [ref[:10].clone()]), (ref, [ref[:10]]), 1e-4, 1e-4)
    assert keeper.summary()["agreed"] == 2
    off = ref.clone()
    off[4000] += 0.01  # one element beyond the bound
    assert not keeper.agrees(off, ref, 1e-4, 1e-4)
    # nothing but tensors of the reference's structure, shape and dtype agrees: those take the full check
    assert not keeper.agrees(ref.clone(), ref.double(), 1e-4, 1e-4)
    assert not keeper.agrees(ref.reshape(64, 64).clone(), ref, 1e-4, 1e-4)
    assert not keeper.agrees((ref.clone(),), [ref], 1e-4, 1e-4)
    assert not keeper.agrees((ref.clone(), 1.0), (ref, 1.0), 1e-4, 1e-4)
    assert not keeper.agrees(ref.clone(), ref.clone().fill_(float("nan")), 1e-4, 1e-4)
    assert keeper.summary() == {"agreed": 2, "device": 0, "host": 0, "at_once": 0, "sampled": 0}


def test_a_large_output_agrees_at_a_sample_of_places_drawn_in_its_round() -> None:
    ref = torch.randn(4 * SAMPLE_ELEMENTS, generator=torch.Generator().manual_seed(0))
    wrong = ref.clone()
    wrong[::2] = 0.0  # half of the work skipped
    keeper = KeptOutputs(torch.device("cpu"), device_bytes=0, host_bytes=0, seed=5)
    assert keeper.agrees(ref.clone(), ref, 1e-4, 1e-4)
    assert not keeper.agrees(wrong, ref, 1e-4, 1e-4)
