"""The recorder's fill of uninitialised memory during checked calls."""

from __future__ import annotations

import math

import torch

from ascend_kernel_gym.evaluation.recorder import Recorder


def _recorded(recorder: Recorder, fn):
    with recorder.recording_forward(()) as stats:
        out = fn()
    return out, stats


def test_fresh_allocations_are_poisoned_per_dtype() -> None:
    recorder = Recorder("akg_candidate")
    floats, stats = _recorded(recorder, lambda: torch.empty(5, dtype=torch.float16))
    assert torch.isnan(floats).all()
    assert stats.ops["aten.empty"] == 1 and "aten.fill_" not in stats.ops  # the fill is the harness's
    first, _ = _recorded(recorder, lambda: torch.empty_like(torch.zeros(4, dtype=torch.int64)))
    second, _ = _recorded(recorder, lambda: torch.zeros(4, dtype=torch.int64).new_empty(4))
    info = torch.iinfo(torch.int64)
    # alternating extremes: an unwritten element differs between two calls on the same inputs
    assert {int(first[0]), int(second[0])} == {info.max, info.min}
    flags, _ = _recorded(recorder, lambda: torch.empty(3, dtype=torch.bool))
    more, _ = _recorded(recorder, lambda: torch.empty(3, dtype=torch.bool))
    assert bool(flags.all()) != bool(more.all())
    complex_, _ = _recorded(recorder, lambda: torch.empty_strided((2, 2), (2, 1), dtype=torch.complex64))
    assert all(math.isnan(v.real) for v in complex_.flatten().tolist())


def test_written_memory_and_unrecorded_calls_are_left_alone() -> None:
    recorder = Recorder("akg_candidate")
    zeros, _ = _recorded(recorder, lambda: torch.zeros(3))
    assert (zeros == 0).all()  # zeros is written memory, not uninitialised
    written, _ = _recorded(recorder, lambda: torch.empty(3).fill_(2.0))
    assert (written == 2.0).all()  # a fill after the allocation wins, as a kernel's store would
    before = recorder.poisoned
    torch.empty(1000)  # not inside a recorded call (timed calls, the harness's own work)
    assert recorder.poisoned == before > 0
    expanded, _ = _recorded(recorder, lambda: torch.empty(1).expand(4))  # a view of a filled allocation
    assert torch.isnan(expanded).all()
