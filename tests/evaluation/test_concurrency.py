"""Several evaluations per device (evaluation/concurrency.py): default count, the gate, the neighbour-OOM rule."""

from __future__ import annotations

import threading

import pytest

from ascend_kernel_gym.evaluation.concurrency import (
    LOW_MEMORY_BYTES,
    OWN_MEMORY_CAP_MESSAGE,
    DeviceGate,
    available_cores,
    default_workers_per_device,
    device_id,
    device_memory,
    mark_retried,
    memory_short,
    neighbour_oom,
    was_retried,
)
from ascend_kernel_gym.evaluation.result import ErrorType, EvalResult

GIB = 1 << 30


def test_default_workers_per_device_follows_cores_and_device_memory() -> None:
    assert default_workers_per_device("interpreter", cores=6, devices=1, device_bytes=None) == 6
    # one H200 (141 GB) or one H100 (an 80 GB card reads 79 GiB) on 16 cores: cores 16 / 2 = 8,
    # memory 141 // 9 = 15 and 79 // 9 = 8: 8 either way
    assert default_workers_per_device("cuda", cores=16, devices=1, device_bytes=141 * GIB) == 8
    assert default_workers_per_device("cuda", cores=16, devices=1, device_bytes=79 * GIB) == 8
    # core-bound: 6 cores / 2 = 3; memory-bound: 27 GB // 9 = 3
    assert default_workers_per_device("cuda", cores=6, devices=1, device_bytes=141 * GIB) == 3
    assert default_workers_per_device("cuda", cores=64, devices=1, device_bytes=27 * GIB) == 3
    # eight devices share the cores: 16 cores / (8 x 2) = 1 each
    assert default_workers_per_device("cuda", cores=16, devices=8, device_bytes=141 * GIB) == 1
    # memory-bound: a 16 GB card gets one worker however many cores
    assert default_workers_per_device("cuda", cores=64, devices=1, device_bytes=16 * GIB) == 1
    # never more than 8 on cuda, never fewer than 1
    assert default_workers_per_device("cuda", cores=512, devices=1, device_bytes=1024 * GIB) == 8
    assert default_workers_per_device("cuda", cores=1, devices=4, device_bytes=8 * GIB) == 1
    # npu (not measured with more): never more than 4, 16 GiB each
    assert default_workers_per_device("npu", cores=512, devices=1, device_bytes=1024 * GIB) == 4
    assert default_workers_per_device("npu", cores=192, devices=8, device_bytes=None) == 4


def test_device_ids_follow_the_visible_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert device_id("cuda", 2) == "2"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "5,GPU-abc")
    assert [device_id("cuda", i) for i in range(3)] == ["5", "GPU-abc", "5"]
    assert device_memory("interpreter", "0") is None and device_memory("npu", "0") is None


def test_memory_is_short_below_a_tenth_or_four_gib() -> None:
    assert memory_short(LOW_MEMORY_BYTES - 1, 16 * GIB)
    assert not memory_short(LOW_MEMORY_BYTES, 16 * GIB)
    assert memory_short(13 * GIB, 140 * GIB) and not memory_short(15 * GIB, 140 * GIB)


def _in_thread(
    gate: DeviceGate, exclusive: bool, entered: threading.Event, leave: threading.Event, need: int | None = None
) -> threading.Thread:
    def hold() -> None:
        with gate.slot(exclusive=exclusive, need=need):
            entered.set()
            leave.wait(30)

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    return thread


def test_a_second_evaluation_waits_while_memory_is_short_and_one_alone_always_goes() -> None:
    memory = [(1 * GIB, 80 * GIB)]  # short
    gate = DeviceGate(lambda: memory[0], poll_s=0.01, workers=2)  # two equal shares fit the room
    first_in, first_out = threading.Event(), threading.Event()
    first = _in_thread(gate, False, first_in, first_out)
    assert first_in.wait(10), "an evaluation alone on the device must go ahead even when memory is short"
    second_in, second_out = threading.Event(), threading.Event()
    second = _in_thread(gate, False, second_in, second_out)
    assert not second_in.wait(0.3)
    assert gate.memory_waits == 1 and gate.load == 2
    memory[0] = (40 * GIB, 80 * GIB)  # memory freed: the second goes in next to the first
    assert second_in.wait(10)
    first_out.set()
    second_out.set()
    first.join(10)
    second.join(10)
    assert gate.load == 0


def test_an_exclusive_slot_waits_for_the_holders_and_holds_newcomers_back() -> None:
    gate = DeviceGate(poll_s=0.01)
    a_in, a_out = threading.Event(), threading.Event()
    a = _in_thread(gate, False, a_in, a_out)
    assert a_in.wait(10)
    x_in, x_out = threading.Event(), threading.Event()
    x = _in_thread(gate, True, x_in, x_out)
    assert not x_in.wait(0.2)
    b_in, b_out = threading.Event(), threading.Event()
    b = _in_thread(gate, False, b_in, b_out)  # arrives while the exclusive one waits
    assert not b_in.wait(0.2)
    a_out.set()
    assert x_in.wait(10)
    assert not b_in.wait(0.2), "a shared slot must not enter while someone has the device to itself"
    x_out.set()
    assert b_in.wait(10)
    b_out.set()
    for thread in (a, x, b):
        thread.join(10)


def test_slots_are_admitted_by_bytes_next_to_those_running_and_one_alone_always_goes() -> None:
    # 100 GiB: the room is 90 GiB less four spare contexts (3 GiB) = 87 GiB
    gate = DeviceGate(lambda: (100 * GIB, 100 * GIB), poll_s=0.01, workers=4)
    assert gate.room() == 87 * GIB
    big_in, big_out = threading.Event(), threading.Event()
    big = _in_thread(gate, False, big_in, big_out, need=60 * GIB)
    assert big_in.wait(10)
    small_in, small_out = threading.Event(), threading.Event()
    small = _in_thread(gate, False, small_in, small_out, need=20 * GIB)
    assert small_in.wait(10), "60 + 20 GiB fit the 87 GiB room"
    third_in, third_out = threading.Event(), threading.Event()
    third = _in_thread(gate, False, third_in, third_out, need=10 * GIB)
    assert not third_in.wait(0.3), "60 + 20 + 10 GiB do not fit"
    assert gate.memory_waits == 1
    small_out.set()
    assert third_in.wait(10)
    # an unknown need counts as a quarter of the room (21.75 GiB): 60 + 10 + 21.75 > 87
    unknown_in, unknown_out = threading.Event(), threading.Event()
    unknown = _in_thread(gate, False, unknown_in, unknown_out)
    assert not unknown_in.wait(0.3)
    third_out.set()
    assert unknown_in.wait(10)
    for event in (big_out, unknown_out):
        event.set()
    for thread in (big, small, third, unknown):
        thread.join(10)
    # larger than the whole room: it still runs, alone
    with gate.slot(need=500 * GIB) as alone:
        assert not alone.had_neighbour


def test_fits_says_whether_a_slot_would_be_admitted_now_without_taking_one() -> None:
    gate = DeviceGate(lambda: (100 * GIB, 100 * GIB), poll_s=0.01, workers=4)  # room: 87 GiB
    assert gate.fits(500 * GIB)  # alone, anything goes
    with gate.slot(need=60 * GIB):
        assert gate.fits(20 * GIB) and not gate.fits(30 * GIB)
        assert gate.memory_waits == 0 and gate.load == 1  # asking held nothing and counted no wait
    assert gate.fits(30 * GIB)


def test_a_device_whose_memory_cannot_be_read_is_sized_by_its_assumed_total() -> None:
    # an Ascend NPU: no reading; 64 GiB assumed, less 10 % and two spare contexts
    gate = DeviceGate(lambda: None, poll_s=0.01, workers=2, total_bytes=64 * GIB)
    assert gate.room() == int(64 * GIB * 0.9) - 2 * (768 << 20)
    assert DeviceGate(lambda: None, workers=2).room() is None  # nothing known: no admission by bytes
    with gate.slot(need=40 * GIB):
        entered = threading.Event()
        leave = threading.Event()
        second = _in_thread(gate, False, entered, leave, need=30 * GIB)
        assert not entered.wait(0.3)
    assert entered.wait(10)
    leave.set()
    second.join(10)


def test_a_slot_held_back_long_enough_is_not_overtaken_by_later_ones_that_fit() -> None:
    gate = DeviceGate(lambda: (100 * GIB, 100 * GIB), poll_s=0.01, workers=4, patience_s=0.2)
    a_in, a_out = threading.Event(), threading.Event()
    a = _in_thread(gate, False, a_in, a_out, need=50 * GIB)
    assert a_in.wait(10)
    big_in, big_out = threading.Event(), threading.Event()
    big = _in_thread(gate, False, big_in, big_out, need=60 * GIB)  # waits for a
    assert not big_in.wait(0.4)  # past its patience now
    late_in, late_out = threading.Event(), threading.Event()
    late = _in_thread(gate, False, late_in, late_out, need=10 * GIB)  # would fit next to a, but queues behind big
    assert not late_in.wait(0.3)
    a_out.set()
    assert big_in.wait(10)
    assert late_in.wait(10)  # 60 + 10 fit
    big_out.set()
    late_out.set()
    for thread in (a, big, late):
        thread.join(10)


def test_an_exclusive_slot_waits_until_the_devices_free_memory_stops_rising() -> None:
    # the previous evaluations' children give their memory back after their results are in
    readings = iter([10 * GIB, 30 * GIB, 50 * GIB, 70 * GIB, 70 * GIB])
    seen: list[int] = []

    def memory() -> tuple[int, int]:
        free = next(readings, 70 * GIB)
        seen.append(free)
        return free, 80 * GIB

    gate = DeviceGate(memory, poll_s=0.01, workers=2)
    gate.room()  # reads the total once
    seen.clear()
    with gate.slot(exclusive=True) as alone:
        assert seen[-2:] == [70 * GIB, 70 * GIB], "it starts once two readings agree"
    assert alone.exclusive and not alone.had_neighbour


def test_slots_know_whether_they_had_a_neighbour() -> None:
    gate = DeviceGate()
    with gate.slot() as alone:
        pass
    assert not alone.had_neighbour
    with gate.slot() as first:
        with gate.slot() as second:
            pass
    assert first.had_neighbour and second.had_neighbour  # the earlier holder learns of the newcomer too


def _oom(message: str) -> EvalResult:
    return EvalResult(
        task_id="t", backend="cuda", profile="full", code_hash="h", error_type=ErrorType.OOM, error_message=message
    )


def test_only_an_out_of_memory_next_to_a_neighbour_is_retried() -> None:
    device_oom = _oom("OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
    assert neighbour_oom(device_oom, had_neighbour=True)
    assert not neighbour_oom(device_oom, had_neighbour=False)
    assert not neighbour_oom(_oom(f"{OWN_MEMORY_CAP_MESSAGE} 16384 MB of memory and was stopped"), True)
    wrong = _oom("x")
    wrong.error_type = ErrorType.VALUE_MISMATCH
    assert not neighbour_oom(wrong, had_neighbour=True)


def test_the_references_out_of_memory_next_to_a_neighbour_is_retried() -> None:
    """Eight workers on an 80 GB H100: the reference child of five evaluations of 50 found no device
    memory (2026-12-05); with neighbours that may be theirs, run again alone; alone, the task's."""
    import torch

    from ascend_kernel_gym.evaluation.errors import reference_failure

    failure = reference_failure(torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 512.00 MiB"), "building")
    result = _oom(failure.message)
    result.error_type = failure.error_type
    assert result.error_type == ErrorType.HARNESS_ERROR
    assert neighbour_oom(result, had_neighbour=True)
    assert not neighbour_oom(result, had_neighbour=False)
    other = reference_failure(RuntimeError("shape mismatch"), "building")
    assert other.error_type == ErrorType.HARNESS_ERROR and other.message == "building: RuntimeError: shape mismatch"
    result.error_message = other.message
    assert not neighbour_oom(result, had_neighbour=True)


def test_allocation_failures_without_the_words_count_as_out_of_memory_and_the_harness_oom_is_retried() -> None:
    """An H100 at eight workers (2026-12-05): cuBLAS could not create its handle in a reference,
    and the harness's own buffers in a candidate's child failed with ``CUDA error: out of memory``."""
    from ascend_kernel_gym.evaluation.errors import HARNESS_OUT_OF_MEMORY, classify_exception, reference_failure

    cublas = RuntimeError("CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`")
    assert classify_exception(cublas) == ErrorType.OOM
    assert classify_exception(RuntimeError("cudaErrorMemoryAllocation")) == ErrorType.OOM
    assert classify_exception(RuntimeError("CUBLAS_STATUS_EXECUTION_FAILED")) != ErrorType.OOM
    result = _oom(reference_failure(cublas, "building").message)
    result.error_type = ErrorType.HARNESS_ERROR
    assert neighbour_oom(result, had_neighbour=True)
    result.error_message = f"{HARNESS_OUT_OF_MEMORY}: torch.AcceleratorError: CUDA error: out of memory"
    assert neighbour_oom(result, had_neighbour=True) and not neighbour_oom(result, had_neighbour=False)
    result.error_message = "evaluator internal error: KeyError: 'x'"
    assert not neighbour_oom(result, had_neighbour=True)


def test_workers_sharing_a_device_plan_their_timing_buffers_with_equal_parts_of_its_memory() -> None:
    from ascend_kernel_gym.evaluation.concurrency import device_share

    assert device_share("cuda", 8) == 0.125 and device_share("npu", 4) == 0.25 and device_share("cuda", 1) == 1.0
    assert device_share("interpreter", 8) == 1.0  # the host's memory, not a device's


def test_a_retried_result_says_so() -> None:
    result = _oom("x")
    assert not was_retried(result)
    assert was_retried(mark_retried(result, "why")) and result.warnings == ["retried: why"]


def test_available_cores_follow_akg_cpus_then_the_affinity(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    monkeypatch.setenv("AKG_CPUS", "3")
    assert available_cores() == 3
    monkeypatch.setenv("AKG_CPUS", "zero")
    assert available_cores() == len(os.sched_getaffinity(0))
    monkeypatch.delenv("AKG_CPUS")
    assert available_cores() == len(os.sched_getaffinity(0))
