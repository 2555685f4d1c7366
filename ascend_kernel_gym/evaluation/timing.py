"""The timing measurement for device backends (cuda, npu): candidate and reference timed side by side.

Protocol (one child, after correctness passed; :func:`.timing_stage.run_timing` sets it up, the
measurement itself is :func:`time_side_by_side`):

- every timed round draws a fresh input set from the task (``placement.RoundInputs``; warm-up
  uses one set of its own), so a model that caches results by input content, even with a
  fingerprint kept on the device, has nothing to hit; before each timed call the set is copied
  (outside the timed window) to a fresh random place in the model's input arena
  (``placement.InputArena``), so every timed call uses inputs at another place in device memory;
- warm-up calls of both models (at least ``warmup`` each and at least ``warmup_s`` seconds:
  :data:`WARMUP_S` where the evaluation has the device alone, none where workers share it),
  which need no quiet device; then the child asks for the device's lease (``quiet``), makes
  ``LEASE_WARMUP`` more calls of each model, whose host times size the cushion (below), and
  runs ``reps`` rounds; in each round the candidate and the reference run in a random order;
  before each timed call a 256 MB buffer is overwritten to flush the L2 cache;
- *stream mode* (the default): ``synchronize(); flush; start.record(); fn(); end.record()``,
  then a device-wide synchronize outside the window. The flush writes are repeated to keep the
  device busy for a *cushion*, so the call is queued behind them and the window measures device
  time: host launch latency up to the cushion is hidden (as for a kernel launched behind other
  work in a model), host overhead beyond it counts. The cushion is ``CUSHION_MS`` (0.4 ms), or
  ``HOST_FACTOR`` times the 90th percentile of the quiet warm-up calls' host time when that is longer
  (at most ``MAX_CUSHION_MS``): the host time of one call differs between processes, and a
  cushion it nearly used up left idle device time in the windows of some evaluations. A timed
  call whose host part still outran the cushion (a hiccup of the machine) grows the cushion for
  the calls after it (to ``HOST_FACTOR`` times that host time, within the same cap) and is timed
  again on a fresh input set, up to ``HOST_RETRIES`` times (``timing["host"]`` says how often), so a model
  that stalls its host on purpose gains no second call on inputs it has seen. Measuring from an idle device
  instead puts the host's wake-up and launch jitter (tens of microseconds, varying between
  processes) into every sample, which dominated 0.1 ms kernels on an H200;
- in stream mode, when the candidate runs second in its round, its load (the round's set, already
  drawn) is queued behind the reference's timed call: the host copies it once the reference's end
  event is queued (and the gate released), before the synchronize, so the device runs the call
  meanwhile and the copies after the window. Only where the caller's ``start_clean`` runs the
  collector (never inside a load), not in check or audit rounds, never a later round's set, and
  dropped when the reference's call is timed again (the candidate then loads after the kept
  call). The reference's load is never queued behind the candidate's call (``QUEUED_LOADS``);
- *synchronized mode*: every Triton launch is probed for the current stream; a launch on any
  stream other than the timing stream (in warm-up or in any timed round) makes the whole
  measurement restart as ``synchronize(); flush; synchronize(); start.record(); fn();
  synchronize(); end.record()``, so work on side streams counts and cannot overlap the flush;
  the median of an empty call's time in that protocol is subtracted from both models;
- in some random rounds the harness checks the library snapshot right after the candidate's
  call and keeps a copy of that timed call's output; once the timed calls are over (the child
  then tells the zygote, which gives the device's lease back: nothing below needs a quiet
  device) each copy is compared with the reference's output on the same inputs (computed again,
  untimed, through the harness's reference path), so a patch that would slow the reference
  down, or a call that skipped its work, is caught (a large output is kept as a random sample of
  its elements, :mod:`.kept_outputs`). A copy that is not kept (on the device or in host memory)
  is compared in its round instead;
- before every ``RELOCATE_EVERY``-th round, when the caller passes ``relocate`` (the child does on
  CUDA when a kernel spills registers: ``placement.LocalMemory``), memory the harness does not
  place is moved, untimed, and each model is called once untimed, so an evaluation samples 25
  places of the context's local memory instead of the one its process happened to get;
- a few rounds chosen at random are *audit* rounds: the candidate runs again, untimed, with the
  operator / launch recorder on, and its output is kept and checked the same way, so switching
  behaviour once timing starts is caught;
- per model, the mean of the timed calls after dropping the fastest and the slowest
  ``TRIM`` share; ``speedup = ref_ms / kernel_ms``. Each call ran on another placement, and some
  kernels run a few percent apart on different placements (PyTorch's strided transpose copy by
  up to 3.5% between inputs 512 bytes to 3 MB apart on an H200): a median of such a mix jumps
  between the levels with the mix, a mean moves with it smoothly, and the trim drops outliers.

Device events come from ``torch.cuda`` or ``torch.npu`` with the same code; on the CPU (tests,
``Job.cpu_timing``) a clock stands in for them. Imports torch: only the zygote and its children
(and tests) import this module.
"""

from __future__ import annotations

import math
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from ascend_kernel_gym.evaluation.errors import StageError
from ascend_kernel_gym.evaluation.result import ErrorType
from ascend_kernel_gym.evaluation.trimmed import TRIM, trimmed_mean

FLUSH_BYTES = 256 * 1024 * 1024
#: wall seconds of warm-up calls (at least ``warmup`` calls each) before the timed rounds
WARMUP_S = 0.05
MAX_WARMUP_CALLS = 200
#: warm-up calls of each model on the quiet device (after the lease's go-ahead): their host times
#: size the cushion (the warm-up before them runs while neighbours may still use the device)
LEASE_WARMUP = 3
#: device time queued (L2 flush writes) ahead of each timed call in stream mode: the host's
#: launch latency up to this much is hidden, as for a kernel launched behind other work
CUSHION_MS = 0.4
#: rounds per move of the memory the harness does not place (``relocate``): 25 places in 100 rounds
RELOCATE_EVERY = 4
MAX_CUSHION_FILLS = 64
#: a timed call whose host time (Python, launches) passed this share of the cushion may have left
#: the device idle inside its window: it is timed again, at most ``HOST_RETRIES`` times (host
#: hiccups are the machine's, not the kernel's; a call that always outruns the cushion keeps its
#: last sample, counted in ``timing["host"]``)
HOST_SHARE = 0.9
HOST_RETRIES = 3
#: the fewest timed rounds a time budget (``budget_s``) leaves a model pair
MIN_BUDGET_REPS = 20
#: at most this share of a model's timed calls is timed again in one measurement (a model that can
#: tell a slow call on the host, by its inputs' placement say, and stalls its host then would
#: otherwise choose its own samples); past it, an exposed call keeps its time
HOST_RETRY_SHARE = 0.1
#: the cushion covers this multiple of the warm-up calls' 90th-percentile host time (the harness's
#: launch hooks and the machine's speed vary between processes: 0.24 to 0.35 ms for one Triton
#: launch on an H200 host), up to ``MAX_CUSHION_MS``
HOST_FACTOR = 1.5
MAX_CUSHION_MS = 3.0
#: the shortest wait the device gate is armed with (the flush write before it counts towards the cushion)
GATE_MIN_MS = 0.05
#: the models whose load may be queued behind the other model's timed call, on the device while
#: the host loads (stream mode, with ``start_clean``, not in check or audit rounds): the
#: candidate's only. Behind the candidate's call, work the candidate left running on a side
#: stream (PyTorch operators are not seen by the launch probe; the device-wide synchronize after
#: the call is what ends it) could overwrite the reference's inputs once copied; behind the
#: reference's call nothing of the candidate's runs. And only with ``start_clean``: a load that
#: collects garbage itself can run candidate code (a generator's ``finally``).
QUEUED_LOADS = frozenset({"cand"})
#: the cushion the CPU stand-in claims (none: no call there is re-timed; tests set one)
CPU_CUSHION_MS = 0.0
STREAM_MODE = "stream"
SYNC_MODE = "synchronized"
METHODS = {
    STREAM_MODE: "{device} events on the calling stream, call queued behind the L2 flush (launch latency up to "
    "the cushion hidden); interleaved; a fresh input placement per call; 10%-trimmed mean",
    SYNC_MODE: "{device} events around call + device-wide synchronize (side-stream launches seen), "
    "empty-call overhead subtracted; interleaved; a fresh input placement per call; 10%-trimmed mean",
}


@dataclass
class TimingResult:
    ref_ms: float
    kernel_ms: float
    speedup: float
    details: dict[str, Any]
    #: what ``quiet()`` returned (None without one)
    quiet: Any = None


class _CpuEvent:
    """A clock reading standing in for a device event (used only to test this stage on the CPU)."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.t = 0.0

    def record(self) -> None:
        self.t = self.clock()

    def synchronize(self) -> None:
        return None

    def elapsed_time(self, end: _CpuEvent) -> float:
        return (end.t - self.t) * 1e3


class _CpuDevice:
    """The part of ``torch.cuda``'s API the timing uses, on a clock in seconds."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock

    def Event(self, enable_timing: bool = True) -> _CpuEvent:  # noqa: N802 - the name of torch.cuda.Event
        return _CpuEvent(self.clock)

    @staticmethod
    def synchronize() -> None:
        return None


def device_module(device_type: str, clock: Callable[[], float] = time.perf_counter) -> Any:
    """``torch.cuda`` or ``torch.npu``; for ``cpu`` (tests of this stage) events that read ``clock``."""
    if device_type == "cpu":
        return _CpuDevice(clock)
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


#: the side-stream launch counter and its value when the rounds began (None: not watched)
_Watch = tuple[Callable[[], int], int] | None


class _SideStreamLaunchError(Exception):
    """The candidate launched a kernel on a stream other than the timing stream."""


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
    after_candidate: Callable[[int], None] | None = None,
    check: Callable[[int], None] | None = None,
    check_rounds: int = 10,
    side_stream_launches: Callable[[], int] | None = None,
    warmup_s: float = WARMUP_S,
    cushion_target_ms: float = CUSHION_MS,
    relocate: Callable[[], bool] | None = None,
    relocate_every: int = RELOCATE_EVERY,
    clock: Callable[[], float] = time.perf_counter,
    quiet: Callable[[], Any] | None = None,
    gate: Any = None,
    budget_s: float | None = None,
    start_clean: Callable[[], None] | None = None,
) -> TimingResult:
    """Time both models; ``run_*(k)`` load input set ``k`` (untimed) and return the call.

    ``run_*`` must return a zero-argument callable that performs only the model call, after
    having copied set ``k`` into the model's input buffers. Round ``r`` uses set ``r mod
    num_sets`` (a call timed again, set ``k + num_sets * attempt``); warm-up uses set ``-1``.
    ``start_clean()``, when given, runs before every call of either model (warm-up, relocation
    and timed calls alike; before a timed call after the device-wide synchronize, and the device
    is synchronized again after it), so ``run_*`` need not collect garbage or restore settings
    themselves; then, in stream mode, ``run_candidate(k)`` may run while the reference's timed
    call on set ``k`` still runs on the device (:data:`QUEUED_LOADS`), and anything it launches on
    the stream comes after that call. In
    the check and audit rounds (chosen at random, untimed): ``after_candidate(k)`` runs right
    after the candidate's call, ``check(k)`` once both models ran (``k``: the set the
    candidate's call was timed on), then ``audit(k)`` in the audit rounds. ``side_stream_launches()`` counts
    the kernel launches seen so far on a stream other than the calling one; when it grows (in
    warm-up or in any timed round) the whole measurement is redone in the synchronized mode.
    ``relocate()`` (untimed) moves memory the models use but the harness does not place, such as
    the context's local memory, before every ``relocate_every``-th round; when it did, each
    model is called once untimed on the round's set, so a lazy allocation the move causes is
    never timed. ``clock`` (seconds) times the calls on ``cpu`` only, where it stands in for the
    device's events (tests give their own); devices always time with their events.

    ``quiet()`` (the device's lease) is called once the warm-up that needs no quiet device is
    over; :data:`LEASE_WARMUP` more calls of each model follow on the quiet device, and their host
    times size the cushion. Its return value is kept as ``TimingResult.quiet``. With a ``gate``
    (:class:`.device_gate.DeviceGate`) the stream-mode cushion is one flush write and the gate,
    which holds the device until the call returned or for the cushion's length at most.

    ``budget_s`` bounds the rounds by time: with one round of both models taking ``t`` seconds
    on the quiet device (the fastest of the :data:`LEASE_WARMUP` calls), ``reps`` becomes
    ``min(reps, max(MIN_BUDGET_REPS, ceil(budget_s / t)))``. Only slow models lose rounds: a
    100-round default with a 1 s budget keeps every round of pairs under 10 ms. It bounds the
    device's lease, which the slowest tasks hold for seconds (a 89 ms kernel: 15 s for 100
    rounds of both models).
    """
    dev = device_module(device_type, clock)
    run_candidate = _keeping_stream(run_candidate, dev)
    clean_candidate, clean_reference = _cleanly(run_candidate, start_clean), _cleanly(run_reference, start_clean)
    flush = torch.empty(max(1, flush_bytes // 4), dtype=torch.int32, device=device_type)
    count = side_stream_launches or (lambda: 0)
    seen = count()
    started = time.perf_counter()
    _warm_up(clean_candidate, clean_reference, dev, warmup, warmup_s)
    warmed = time.perf_counter()
    granted = quiet() if quiet is not None else None
    leased = time.perf_counter()
    host_ms, round_s = _host_times(clean_candidate, clean_reference, dev, LEASE_WARMUP)
    host_p90_ms = _quantile(host_ms, 0.9)
    asked = reps
    if budget_s is not None:
        reps = budgeted_reps(reps, budget_s, min(round_s))
    mode = STREAM_MODE if count() == seen else SYNC_MODE
    target_ms = min(MAX_CUSHION_MS, max(cushion_target_ms, HOST_FACTOR * host_p90_ms))
    if device_type != "cpu":
        fills, cushion_ms = cushion(dev, flush, target_ms)
        pad = _Cushion(fills, cushion_ms / fills)
        if gate is not None:  # one flush write, then the gate for the rest of the cushion
            pad = _Cushion(1, pad.fill_ms, gate=gate, gate_ms=max(GATE_MIN_MS, fills * pad.fill_ms - pad.fill_ms))
    else:
        pad = _Cushion(1, CPU_CUSHION_MS, gate=gate, gate_ms=CPU_CUSHION_MS if gate is not None else None)
    start_ms = pad.ms
    audit_at = set(rng.sample(range(reps), min(audit_rounds, reps)))
    check_at = set(rng.sample(range(reps), min(check_rounds, reps)))

    host = _HostTimes()

    def rounds(mode: str, pad: _Cushion, watch: _Watch) -> tuple[list[float], list[float]]:
        return _rounds(
            run_candidate, run_reference, audit, dev, flush, pad, mode, reps, num_sets, rng, audit_at,
            check_at, after_candidate, check, watch, relocate, relocate_every, host, start_clean,
        )  # fmt: skip

    try:
        cand_times, ref_times = rounds(mode, pad, (count, count()) if mode == STREAM_MODE else None)
    except _SideStreamLaunchError:
        mode = SYNC_MODE
        host = _HostTimes()
        cand_times, ref_times = rounds(mode, _Cushion(1, pad.fill_ms), None)  # no gate: every call waits anyway
    finished = time.perf_counter()
    overhead = 0.0
    if mode == SYNC_MODE:
        overhead = statistics.median(timed_call(lambda: None, dev, flush, 1, SYNC_MODE, i) for i in range(21))
        cand_times = [max(t - overhead, 0.0) for t in cand_times]
        ref_times = [max(t - overhead, 0.0) for t in ref_times]
    kernel_ms = trimmed_mean(cand_times, TRIM)
    ref_ms = trimmed_mean(ref_times, TRIM)
    speedup = ref_ms / kernel_ms if kernel_ms > 0 else float("inf")
    details = {
        "reps": reps,
        "reps_asked": asked,
        "budget_s": budget_s,
        "warmup": warmup,
        "audit_rounds": len(audit_at),
        # rounds whose output was checked (the audited ones among them: their audit call is checked too)
        "checked_rounds": len(check_at | audit_at) if check is not None else 0,
        "input_sets": num_sets,
        "kernel_ms_median": statistics.median(cand_times),
        "ref_ms_median": statistics.median(ref_times),
        # every timed call in round order, so other summaries can be computed from one evaluation
        "kernel_ms_samples": [round(t, 5) for t in cand_times],
        "ref_ms_samples": [round(t, 5) for t in ref_times],
        "kernel_ms_p25": _quantile(cand_times, 0.25),
        "kernel_ms_p75": _quantile(cand_times, 0.75),
        "ref_ms_p25": _quantile(ref_times, 0.25),
        "ref_ms_p75": _quantile(ref_times, 0.75),
        "l2_flush_bytes": flush_bytes,
        "mode": mode,
        "method": METHODS[mode].format(device=device_type),
        # wall seconds of this function's parts (the rounds include their loads, checks and audits)
        "phase_s": {
            "warmup": round(warmed - started, 4),
            "quiet_wait": round(leased - warmed, 4),
            "rounds": round(finished - leased, 4),
        },
    }
    if mode == SYNC_MODE:
        details["sync_overhead_ms"] = overhead
    else:
        details["cushion_ms"] = pad.ms
        details["cushion_start_ms"] = start_ms
        details["cushion_grown"] = pad.grown
        details["gated"] = pad.gate is not None
        details["host"] = host.summary()
    return TimingResult(ref_ms=ref_ms, kernel_ms=kernel_ms, speedup=speedup, details=details, quiet=granted)


@dataclass
class _Cushion:
    """The flush writes queued ahead of each timed call in stream mode: ``fills`` of ``fill_ms`` each."""

    fills: int
    fill_ms: float
    #: how often a call's host part made it grow
    grown: int = 0
    #: the device gate (:mod:`.device_gate`) after the flush write, and the longest it waits
    gate: Any = None
    gate_ms: float | None = None

    @property
    def ms(self) -> float:
        """The host time the cushion hides: the flush writes, and the gate's limit when there is one."""
        return self.fills * self.fill_ms + (self.gate_ms or 0.0)

    def grow(self, host_ms: float) -> None:
        """Cover ``HOST_FACTOR`` times ``host_ms`` (a call's host part that outran the cushion) from
        the next call on, up to ``MAX_CUSHION_MS``: the warm-up calls' host time can be below the
        timed calls' (a slower stretch of the machine), and every call it outruns is timed again."""
        if self.gate_ms is not None:
            limit = min(MAX_CUSHION_MS, HOST_FACTOR * host_ms) - self.fills * self.fill_ms
            if limit > self.gate_ms:
                self.gate_ms = limit
                self.grown += 1
            return
        if self.fill_ms <= 0:
            return
        fills = min(MAX_CUSHION_FILLS, math.ceil(min(MAX_CUSHION_MS, HOST_FACTOR * host_ms) / self.fill_ms))
        if fills > self.fills:
            self.fills = fills
            self.grown += 1


@dataclass
class _HostTimes:
    """The host's time inside each timed call, and the calls re-timed because it outran the cushion."""

    samples: dict[str, list[float]] = field(default_factory=lambda: {"cand": [], "ref": []})
    retries: dict[str, int] = field(default_factory=lambda: {"cand": 0, "ref": 0})
    kept_exposed: dict[str, int] = field(default_factory=lambda: {"cand": 0, "ref": 0})
    #: wall seconds of the rounds spent loading input sets and in the timed calls (the lease's share)
    load_s: float = 0.0
    calls_s: float = 0.0

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for which, name in (("cand", "kernel"), ("ref", "ref")):
            values = self.samples[which]
            out[f"{name}_host_ms_p50"] = round(_quantile(values, 0.5), 5) if values else None
            out[f"{name}_host_ms_max"] = round(max(values), 5) if values else None
            out[f"{name}_retimed"] = self.retries[which]
            out[f"{name}_exposed_kept"] = self.kept_exposed[which]
        out["load_s"] = round(self.load_s, 4)
        out["calls_s"] = round(self.calls_s, 4)
        return out


def _warm_up(
    run_candidate: Callable[[int], Any],
    run_reference: Callable[[int], Any],
    dev: Any,
    warmup: int,
    warmup_s: float,
) -> None:
    """At least ``warmup`` calls of each model, and more until ``warmup_s`` have passed (clocks,
    caches). Needs no quiet device: nothing here is measured."""
    started = time.perf_counter()
    i = 0
    while i < warmup or (time.perf_counter() - started < warmup_s and i < MAX_WARMUP_CALLS):
        for prepare in (run_candidate, run_reference):
            prepare(-1)()
        dev.synchronize()
        i += 1


def budgeted_reps(reps: int, budget_s: float, round_s: float) -> int:
    """The rounds a time budget leaves: ``reps`` where they fit, else as many as fit, at least
    :data:`MIN_BUDGET_REPS` (and never more than ``reps``)."""
    if round_s <= 0 or reps * round_s <= budget_s:
        return reps
    return min(reps, max(MIN_BUDGET_REPS, math.ceil(budget_s / round_s)))


def _host_times(
    run_candidate: Callable[[int], Any], run_reference: Callable[[int], Any], dev: Any, rounds: int
) -> tuple[list[float], list[float]]:
    """The host's milliseconds of ``rounds`` calls of each model (on the warm-up's set): what the
    cushion must cover; and the wall seconds of each round of both calls, the device's work
    included. Taken on the quiet device, where the timed calls run."""
    host: list[float] = []
    walls: list[float] = []
    for _ in range(max(1, rounds)):
        began = time.perf_counter()
        for prepare in (run_candidate, run_reference):
            call = prepare(-1)
            t0 = time.perf_counter()
            call()
            host.append((time.perf_counter() - t0) * 1e3)
        dev.synchronize()
        walls.append(time.perf_counter() - began)
    return host, walls


def cushion(dev: Any, flush: torch.Tensor, target_ms: float) -> tuple[int, float]:
    """How many flush writes keep the device busy for ``target_ms`` (and how long that is)."""
    times = []
    for i in range(3):
        start = dev.Event(enable_timing=True)
        end = dev.Event(enable_timing=True)
        dev.synchronize()
        start.record()
        flush.fill_(i)
        end.record()
        end.synchronize()
        times.append(float(start.elapsed_time(end)))
    fill_ms = max(statistics.median(times), 1e-3)
    fills = max(1, min(MAX_CUSHION_FILLS, math.ceil(target_ms / fill_ms)))
    return fills, fills * fill_ms


def timed_call(call: Callable[[], Any], dev: Any, flush: torch.Tensor, fills: int, mode: str, rep: int) -> float:
    """Milliseconds of one ``call`` on ``dev`` after ``fills`` flush writes, in ``mode``."""
    return timed_call_host(call, dev, flush, fills, mode, rep)[0]


def timed_call_host(
    call: Callable[[], Any],
    dev: Any,
    flush: torch.Tensor,
    fills: int,
    mode: str,
    rep: int,
    *,
    between: Callable[[], None] | None = None,
    before: Callable[[], None] | None = None,
) -> tuple[float, float]:
    """:func:`timed_call`, and the host's milliseconds from the first flush write's launch until
    ``call`` returned (in stream mode, the window holds idle device time when this passes the cushion).

    ``before()`` runs after the first synchronize, and the device is synchronized again after it:
    what it launches is over before the flush. ``between()`` runs once the end event is queued,
    before the final synchronize (which runs even when it raises): what it launches on the stream
    comes after the window."""
    start = dev.Event(enable_timing=True)
    end = dev.Event(enable_timing=True)
    _synchronized(dev, before)
    t0 = time.perf_counter()  # the idle device starts the first flush write about now
    for _ in range(fills):
        flush.fill_(rep)
    if mode == SYNC_MODE:
        dev.synchronize()
    start.record()
    call()
    host_ms = (time.perf_counter() - t0) * 1e3
    if mode == SYNC_MODE:
        dev.synchronize()
    end.record()
    _then_synchronize(dev, between)  # device-wide, outside the window in stream mode: nothing is left running
    return float(start.elapsed_time(end)), host_ms


def _synchronized(dev: Any, before: Callable[[], None] | None) -> None:
    """Synchronize the device, then run ``before()`` and synchronize again after it."""
    dev.synchronize()
    if before is not None:
        before()
        dev.synchronize()


def _cleanly(prepare: Callable[[int], Any], start_clean: Callable[[], None] | None) -> Callable[[int], Any]:
    """``prepare`` with ``start_clean()`` run first (``prepare`` itself when there is none)."""
    if start_clean is None:
        return prepare

    def prepared(k: int) -> Any:
        start_clean()
        return prepare(k)

    return prepared


def _then_synchronize(dev: Any, between: Callable[[], None] | None) -> None:
    try:
        if between is not None:
            between()
    finally:
        dev.synchronize()


def gated_call_host(
    call: Callable[[], Any],
    dev: Any,
    flush: torch.Tensor,
    gate: Any,
    limit_ms: float,
    rep: int,
    *,
    between: Callable[[], None] | None = None,
    before: Callable[[], None] | None = None,
) -> tuple[float, float, bool]:
    """:func:`timed_call_host` in stream mode with the device gate: the L2 flush, then the gate,
    which holds the device until ``call`` has returned (or ``limit_ms`` at most); also whether the
    gate opened by its limit (then the window may hold idle device time). ``between()`` runs once
    the gate is released, before the final synchronize; ``before()`` as there."""
    start = dev.Event(enable_timing=True)
    end = dev.Event(enable_timing=True)
    _synchronized(dev, before)
    t0 = time.perf_counter()
    flush.fill_(rep)
    gate.arm(limit_ms)
    start.record()
    call()
    end.record()  # queued before the gate opens: the device never waits for it inside the window
    host_ms = (time.perf_counter() - t0) * 1e3
    gate.release()
    _then_synchronize(dev, between)
    return float(start.elapsed_time(end)), host_ms, gate.opened_by_limit()


def _rounds(
    run_candidate: Callable[[int], Any],
    run_reference: Callable[[int], Any],
    audit: Callable[[int], None],
    dev: Any,
    flush: torch.Tensor,
    pad: _Cushion,
    mode: str,
    reps: int,
    num_sets: int,
    rng: random.Random,
    audit_at: set[int],
    check_at: set[int],
    after_candidate: Callable[[int], None] | None,
    check: Callable[[int], None] | None,
    watch: _Watch,
    relocate: Callable[[], bool] | None,
    relocate_every: int,
    host: _HostTimes,
    start_clean: Callable[[], None] | None = None,
) -> tuple[list[float], list[float]]:
    cand_times: list[float] = []
    ref_times: list[float] = []
    retry_budget = max(1, math.ceil(HOST_RETRY_SHARE * reps))
    untimed = (_cleanly(run_candidate, start_clean), _cleanly(run_reference, start_clean))  # after a relocation
    for rep in range(reps):
        k = rep % num_sets
        if relocate is not None and rep % relocate_every == 0 and relocate():
            for prepare in untimed:
                prepare(k)()
            dev.synchronize()
        order = [("cand", run_candidate), ("ref", run_reference)]
        rng.shuffle(order)
        checked = rep in check_at or rep in audit_at
        second = order[1]
        # The second model's load on the round's set, queued behind the first model's call (not
        # where ``after_candidate`` must come first: no harness code may run before it).
        queued = None
        if mode == STREAM_MODE and not checked and start_clean is not None and second[0] in QUEUED_LOADS:
            queued = _Queued(second[1], k, watch)
        cand_key = k
        for slot, (which, prepare) in enumerate(order):
            for attempt in range(1 + HOST_RETRIES):
                # Timed again on a fresh input set: a model that stalls its host on purpose must
                # not get a second call on inputs it has just seen (and could have cached).
                key = k + num_sets * attempt
                between = queued if slot == 0 and attempt == 0 else None
                t0 = time.perf_counter()
                call = queued.take() if queued is not None and slot == 1 and attempt == 0 else None
                if call is None:
                    call = prepare(key)
                t1 = time.perf_counter()
                if pad.gate is not None and mode == STREAM_MODE:
                    elapsed, host_ms, exposed = gated_call_host(
                        call, dev, flush, pad.gate, pad.gate_ms or 0.0, rep, between=between, before=start_clean
                    )
                else:
                    elapsed, host_ms = timed_call_host(
                        call, dev, flush, pad.fills, mode, rep, between=between, before=start_clean
                    )
                    exposed = mode == STREAM_MODE and pad.ms > 0 and host_ms > HOST_SHARE * pad.ms
                host.load_s += t1 - t0
                host.calls_s += time.perf_counter() - t1
                if between is not None:  # the second model's load ran inside the call's span
                    host.load_s += between.load_s
                    host.calls_s -= between.load_s
                if which == "cand":
                    _check_side_streams(watch)
                if not exposed:
                    break
                pad.grow(host_ms)
                if attempt == HOST_RETRIES or host.retries[which] >= retry_budget:
                    # Kept as it is (idle device time and all): a model that stalls its host
                    # whenever it guesses this call is slow must not pick which calls count.
                    host.kept_exposed[which] += 1
                    break
                host.retries[which] += 1
                if queued is not None:
                    queued.take()  # dropped: the second model loads again once the first one's call is kept
            host.samples[which].append(host_ms)
            (cand_times if which == "cand" else ref_times).append(elapsed)
            if which == "cand":
                cand_key = key
                if after_candidate is not None and checked:
                    after_candidate(key)  # untimed: the library snapshot, before the reference runs
        if check is not None and checked:
            check(cand_key)  # untimed: the candidate's output of this round, on the set it was timed on
        if rep in audit_at:
            audit(k)
    return cand_times, ref_times


class _Queued:
    """The second model's call of a round, loaded on the round's set ``k`` as the ``between`` of
    the first model's timed call, once the side-stream count is checked."""

    def __init__(self, prepare: Callable[[int], Any], k: int, watch: _Watch) -> None:
        self.prepare = prepare
        self.k = k
        self.watch = watch
        self.call: Callable[[], Any] | None = None
        self.load_s = 0.0

    def __call__(self) -> None:
        _check_side_streams(self.watch)
        t0 = time.perf_counter()
        self.call = self.prepare(self.k)
        self.load_s = time.perf_counter() - t0

    def take(self) -> Callable[[], Any] | None:
        call, self.call = self.call, None
        return call


def _check_side_streams(watch: _Watch) -> None:
    if watch is not None and watch[0]() != watch[1]:
        raise _SideStreamLaunchError


def _keeping_stream(prepare: Callable[[int], Any], dev: Any) -> Callable[[int], Any]:
    """``prepare`` whose calls must leave the current stream as they found it.

    The flush, the gate and the window's events go on the current stream: a ``forward`` that made
    another stream current after its launches would have the next windows recorded on a stream
    its kernels do not run on (red team, 2026-12-05). Refused as a hack.
    """
    current = getattr(dev, "current_stream", None)
    if current is None:
        return prepare
    timing_stream = current()

    def prepared(k: int) -> Callable[[], Any]:
        call = prepare(k)

        def checked() -> Any:
            out = call()
            if current() != timing_stream:
                raise StageError(
                    ErrorType.FORBIDDEN,
                    "ModelNew.forward returned with another stream current than the one it was called on: "
                    "launch on any stream you like, but make the caller's stream current again before returning",
                    hack=True,
                )
            return out

        return checked

    return prepared
