"""Profiling stage for device backends (cuda, npu): candidate and reference timed side by side.

Protocol (one child, after correctness passed):

- ``K`` input sets are drawn up front with their reference outputs; each timed call first copies
  one set into fixed input buffers (outside the timed window), so a candidate that caches
  results by input address returns stale data, which the audit calls catch;
- warm-up calls of both models, then ``reps`` rounds; in each round the candidate and the
  reference run in a random order; before each timed call a 256 MB buffer is overwritten to
  flush the L2 cache;
- each timed call is ``start.record(); fn(); device.synchronize(); end.record();
  end.synchronize()``: the device-wide synchronize makes work the candidate put on side streams
  count, at the price of a small constant (the same for both models);
- after the candidate's call in some random rounds the harness checks the library snapshot
  (untimed), so a patch that would slow the reference down is caught;
- a few rounds chosen at random are *audit* rounds: the candidate runs untimed with the
  operator / launch recorder on and its output is checked against the reference output of
  that input set, so switching behaviour once timing starts is caught;
- medians of the per-call times; ``speedup = ref_ms / kernel_ms``.

Device events come from ``torch.cuda`` or ``torch.npu`` with the same code. Imports torch.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

FLUSH_BYTES = 256 * 1024 * 1024
IMPLAUSIBLE_SPEEDUP = 10.0


@dataclass
class TimingResult:
    ref_ms: float
    kernel_ms: float
    speedup: float
    details: dict[str, Any]


class _CpuEvent:
    """Wall-clock stand-in for a device event (used only to test this stage on the CPU)."""

    def __init__(self, enable_timing: bool = True) -> None:
        self.t = 0.0

    def record(self) -> None:
        import time

        self.t = time.perf_counter()

    def synchronize(self) -> None:
        return None

    def elapsed_time(self, end: _CpuEvent) -> float:
        return (end.t - self.t) * 1e3


class _CpuDevice:
    Event = _CpuEvent

    @staticmethod
    def synchronize() -> None:
        return None


def device_module(device_type: str) -> Any:
    """``torch.cuda`` or ``torch.npu`` (a wall-clock shim for ``cpu``, for tests of this stage)."""
    if device_type == "cpu":
        return _CpuDevice
    module = getattr(torch, device_type, None)
    if module is None or not hasattr(module, "Event"):
        raise RuntimeError(f"torch has no event API for device type {device_type!r}")
    return module


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    pos = (len(ordered) - 1) * q
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def time_side_by_side(
    run_candidate: Callable[[int], Any],
    run_reference: Callable[[int], Any],
    audit: Callable[[int], None],
    *,
    device_type: str,
    num_sets: int,
    reps: int = 100,
    warmup: int = 3,
    audit_rounds: int = 5,
    rng: random.Random,
    flush_bytes: int = FLUSH_BYTES,
    after_candidate: Callable[[], None] | None = None,
    check_rounds: int = 10,
) -> TimingResult:
    """Time both models; ``run_*(k)`` load input set ``k`` then call the model (load is untimed).

    ``run_*`` must return a zero-argument callable that performs only the model call, after
    having copied set ``k`` into the model's input buffers.
    """
    dev = device_module(device_type)
    flush = torch.empty(max(1, flush_bytes // 4), dtype=torch.int32, device=device_type)
    for i in range(warmup):
        run_candidate(i % num_sets)()
        run_reference(i % num_sets)()
    dev.synchronize()
    audit_at = set(rng.sample(range(reps), min(audit_rounds, reps)))
    check_at = set(rng.sample(range(reps), min(check_rounds, reps)))
    cand_times: list[float] = []
    ref_times: list[float] = []
    for rep in range(reps):
        k = rep % num_sets
        order = [("cand", run_candidate), ("ref", run_reference)]
        rng.shuffle(order)
        for which, prepare in order:
            call = prepare(k)
            flush.fill_(rep)
            start = dev.Event(enable_timing=True)
            end = dev.Event(enable_timing=True)
            dev.synchronize()
            start.record()
            call()
            dev.synchronize()
            end.record()
            end.synchronize()
            elapsed = float(start.elapsed_time(end))
            (cand_times if which == "cand" else ref_times).append(elapsed)
            if which == "cand" and after_candidate is not None and (rep in check_at or rep in audit_at):
                after_candidate()  # untimed: e.g. the library snapshot, before the reference runs
        if rep in audit_at:
            audit(k)
    del flush
    kernel_ms = statistics.median(cand_times)
    ref_ms = statistics.median(ref_times)
    speedup = ref_ms / kernel_ms if kernel_ms > 0 else float("inf")
    details = {
        "reps": reps,
        "warmup": warmup,
        "audit_rounds": len(audit_at),
        "input_sets": num_sets,
        "kernel_ms_p25": _quantile(cand_times, 0.25),
        "kernel_ms_p75": _quantile(cand_times, 0.75),
        "ref_ms_p25": _quantile(ref_times, 0.25),
        "ref_ms_p75": _quantile(ref_times, 0.75),
        "l2_flush_bytes": flush_bytes,
        "method": f"{device_type} events around call + device-wide synchronize, interleaved, median",
    }
    return TimingResult(ref_ms=ref_ms, kernel_ms=kernel_ms, speedup=speedup, details=details)


def min_bytes(inputs: list[Any], outputs: Any) -> int:
    """Bytes any implementation must move at least: read every input once, write every output once."""
    total = 0

    def add(value: Any) -> None:
        nonlocal total
        if isinstance(value, torch.Tensor):
            total += value.numel() * value.element_size()
        elif isinstance(value, (tuple, list)):
            for item in value:
                add(item)

    add(inputs)
    add(outputs)
    return total


def plausibility_warnings(
    timing: TimingResult, inputs: list[Any], outputs: Any, bandwidth_gbps: float | None
) -> list[str]:
    """Warnings for speedups that are too good to be true."""
    warnings = []
    if timing.speedup > IMPLAUSIBLE_SPEEDUP:
        warnings.append(
            f"implausible speedup {timing.speedup:.1f}x (> {IMPLAUSIBLE_SPEEDUP:.0f}x): check the kernel computes the "
            "full result"
        )
    if bandwidth_gbps:
        floor_ms = min_bytes(inputs, outputs) / (bandwidth_gbps * 1e9) * 1e3
        if timing.kernel_ms < 0.9 * floor_ms:
            warnings.append(
                f"kernel time {timing.kernel_ms:.4f} ms is below the memory-bandwidth floor {floor_ms:.4f} ms for "
                "reading the inputs and writing the outputs once"
            )
    return warnings
