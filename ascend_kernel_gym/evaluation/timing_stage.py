"""The timing stage in the child: sets up and runs :func:`.timing.time_side_by_side`.

:func:`run_timing` draws the rounds' input sets, builds each model's input arena
(:mod:`.placement`), wires the untimed checks of the rounds (the library snapshot after the
candidate's call, its output compared with the reference's on the same inputs, recorded audit
calls), counts side-stream launches, asks for the device's lease and records the result.

The checked and audited rounds' outputs are compared with the reference's once the timed calls
are over and the lease is given back (:class:`KeptOutputs`): each copy is kept in device memory
while it fits the evaluation's share (on a shared device, also what its judge left idle), else in
host memory while it fits the child's allowance and
copying costs the lease less than checking, else compared at once, inside the lease. The
comparison asks for the reference's rounding slack only when the plain tolerance refuses the
output (the slack only widens it), so a correct output costs one reference call per check.

Imports torch: only the zygote's children (and tests) import this module.
"""

from __future__ import annotations

import contextlib
import gc
import random
import time
from collections.abc import Callable, Iterator
from typing import Any

import torch

from ascend_kernel_gym.evaluation import device_gate, placement
from ascend_kernel_gym.evaluation.compare import outputs_close
from ascend_kernel_gym.evaluation.correctness import (
    call_candidate,
    enter_candidate_call,
    reference_slack,
    run_reference,
)
from ascend_kernel_gym.evaluation.errors import StageError, candidate_failure
from ascend_kernel_gym.evaluation.inputs import clone_inputs, make_inputs, map_tensors
from ascend_kernel_gym.evaluation.job import Job
from ascend_kernel_gym.evaluation.outputs import OutputCheckError, detach_copy, plain_output
from ascend_kernel_gym.evaluation.placement import min_bytes
from ascend_kernel_gym.evaluation.process import device_reserved_bytes, own_rss_bytes
from ascend_kernel_gym.evaluation.result import ErrorType
from ascend_kernel_gym.evaluation.snapshot import check_snapshot
from ascend_kernel_gym.evaluation.state import ChildState
from ascend_kernel_gym.evaluation.timing import FLUSH_BYTES, TimingResult, time_side_by_side

IMPLAUSIBLE_SPEEDUP = 10.0
_TENSOR = torch.Tensor


def _in_reference_state(reference: Any) -> Callable[..., Any]:
    """``reference`` called with grad mode off (every timed call too); the harness's other settings
    are put in place before each call, untimed (:func:`_starting_clean`)."""

    def call(*inputs: Any) -> Any:
        with torch.no_grad():
            return reference(*inputs)

    return call


def _starting_clean(prepare: Callable[[int], Any]) -> Callable[[int], Any]:
    """``prepare`` after :func:`.correctness.enter_candidate_call`: every call of either model in the
    timing stage starts as the recorded calls do (collected, collector off, the harness's
    settings), untimed, so no call can tell a timed round from a trial or an audit."""

    def prepared(k: int) -> Any:
        enter_candidate_call()
        return prepare(k)

    return prepared


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


#: share of the device's free memory the timing stage's arenas, kept outputs and spacers of both
#: models may take
TIMING_MEMORY_SHARE = 0.25


def run_timing(
    state: ChildState, task_module: Any, reference: Any, candidate: Any, device: torch.device, rng: random.Random
) -> None:
    """Time the candidate against the reference (:func:`time_side_by_side`) and record the result.

    Sets up each model's input arena (:mod:`.placement`), the untimed checks of the rounds (the
    library snapshot, outputs compared with the reference's, recorded audit calls), the count of
    side-stream launches and the quiet device, then fills ``ref_ms``, ``kernel_ms``, ``speedup``,
    ``timing`` and the plausibility warnings.
    """
    job, result = state.job, state.result
    atol, rtol = job.task.atol, job.task.rtol
    started = time.perf_counter()
    # Wall seconds outside the timed calls: drawing inputs, and the checks (of which: reference
    # re-runs, recorded audit calls, output comparisons, copies kept for after the timed calls).
    spent = dict.fromkeys(("inputs", "checks", "reference_reruns", "audit_calls", "compare", "keep"), 0.0)

    @contextlib.contextmanager
    def spending(part: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            spent[part] += time.perf_counter() - t0

    def draw_inputs(seed: int) -> list[Any]:
        with spending("inputs"):
            return make_inputs(task_module, seed, "task", device)

    def timed_part(part: Callable[[int], None]) -> Callable[[int], None]:
        def run(k: int) -> None:
            with spending("checks"):
                part(k)

        return run

    # Each round's set is drawn in its round, not ahead: a set in device memory before its round is
    # one a kernel reading beyond its arguments could find and answer in advance.
    source = placement.RoundInputs(draw_inputs, rng.getrandbits(62))
    first = source[0]
    rerun_started = time.perf_counter()
    first_out = detach_copy(run_reference(state, reference, clone_inputs(first)))
    rerun_s = time.perf_counter() - rerun_started  # what a check's reference re-run costs
    share = TIMING_MEMORY_SHARE * min(1.0, max(0.0, job.device_share))
    ring, slack = placement.timing_memory([first], first_out, device, share)
    arenas = {
        name: placement.InputArena(model, source, rng, slack=slack, output_ring=ring)
        for name, model in (("candidate", candidate), ("reference", _in_reference_state(reference)))
    }
    expected: dict[int, Any] = {}

    def reference_output(k: int) -> Any:
        """The reference's output on round ``k``'s inputs (untimed)."""
        if k not in expected:
            expected.clear()
            with spending("reference_reruns"):
                expected[k] = detach_copy(run_reference(state, reference, clone_inputs(source[k])))
        return expected[k]

    def check_output(out: Any, k: int) -> None:
        ref_out = reference_output(k)

        def slack() -> Any:
            with spending("reference_reruns"):
                return reference_slack(state, reference, source[k], ref_out)

        started, reruns = time.perf_counter(), spent["reference_reruns"]
        close = matches_reference(out, ref_out, atol, rtol, slack)
        spent["compare"] += time.perf_counter() - started - (spent["reference_reruns"] - reruns)
        if not close:
            raise StageError(
                ErrorType.VALUE_MISMATCH,
                "the output changed during timing (a result cached across calls, or work skipped once timing "
                "started); compute the output from the inputs on every call",
            )

    # The checked and audited rounds' outputs are compared with the reference's once the timed
    # calls are over (and the device's lease is given back), each where its copy fits.
    keeper = KeptOutputs.for_stage(state, device, rerun_s)
    deferred: list[tuple[Any, int]] = []

    def check_later(out: Any, k: int) -> None:
        with spending("keep"):
            kept = keeper.keep(out)
        if kept is None:
            check_output(out, k)
        else:
            deferred.append((kept, k))

    def audit(k: int) -> None:
        with spending("audit_calls"):
            call = call_candidate(state, candidate, arenas["candidate"].load(k), False)
        check_later(call.output, k)

    def after_candidate(k: int) -> None:
        if state.snapshot is not None:
            check_snapshot(state.snapshot)

    def check(k: int) -> None:
        try:
            out = plain_output(arenas["candidate"].last_output)  # no code of the candidate runs
        except OutputCheckError as problem:
            raise StageError(ErrorType.WRONG_OUTPUT_TYPE, f"during timing: {problem}") from None
        check_later(out, k)

    # Only kernels that spill use the context's local memory enough for its place to matter;
    # moving it costs a reallocation of up to a few hundred MB each time.
    spills = state.recorder.max_spills if state.recorder is not None else 0
    local_memory = placement.LocalMemory.for_device(device, rng) if spills > 0 else None
    gate, no_gate = device_gate.ready()
    set_up = time.perf_counter()
    try:
        side_streams = _watch_side_streams(state, device)
        with torch.no_grad():
            timing = time_side_by_side(
                _starting_clean(arenas["candidate"].prepare),
                _starting_clean(arenas["reference"].prepare),
                timed_part(audit),
                device_type=device.type,
                num_sets=job.profile_reps,  # a fresh input set in every round
                reps=job.profile_reps,
                warmup=job.profile_warmup,
                rng=rng,
                flush_bytes=FLUSH_BYTES if device.type != "cpu" else 1 << 20,
                after_candidate=timed_part(after_candidate),
                check=timed_part(check),
                side_stream_launches=side_streams,
                relocate=local_memory.move if local_memory is not None else None,
                quiet=state.link.wait_quiet if state.link is not None else None,
                gate=gate if device.type == "cuda" else None,
                budget_s=job.profile_budget_s,
            )
    except StageError:
        raise
    except BaseException as exc:  # noqa: BLE001
        raise candidate_failure(exc, "timing failed: ", state.candidate_file) from None
    finally:
        gc.enable()  # every call of the stage left it off (``enter_candidate_call``)
        if local_memory is not None:
            local_memory.restore()
    timed = time.perf_counter()
    if state.link is not None:
        state.link.timing_over()  # the device's lease goes back; the checks below need no quiet device
    with spending("checks"):
        while deferred:
            out, k = deferred.pop(0)
            check_output(KeptOutputs.back(out), k)
    result.ref_ms = round(timing.ref_ms, 6)
    result.kernel_ms = round(timing.kernel_ms, 6)
    result.speedup = round(timing.speedup, 4)
    result.timing = timing.details
    result.timing["arena_slack_bytes"] = slack
    result.timing["outputs_kept"] = ring
    result.timing["checks_kept"] = keeper.summary()
    result.timing["local_memory_moves"] = local_memory.moves if local_memory is not None else 0
    result.timing["max_spills"] = spills
    if device.type != "cpu":
        result.timing["gate"] = "on" if gate is not None else no_gate
    result.timing["phase_s"] = {
        "setup": round(set_up - started, 4),
        **result.timing.get("phase_s", {}),
        "after_timing": round(time.perf_counter() - timed, 4),
        **{name: round(seconds, 4) for name, seconds in spent.items()},
    }
    if timing.quiet is not None:
        result.timing["quiet_wait_s"], result.timing["quiet_granted"] = timing.quiet
    result.warnings.extend(plausibility_warnings(timing, first, first_out, _bandwidth_gbps(job)))


def matches_reference(out: Any, ref_out: Any, atol: float, rtol: float, slack_of: Callable[[], Any]) -> bool:
    """Whether ``out`` is within tolerance of ``ref_out``; the reference's rounding slack
    (``slack_of()``, a reference call in float32) is asked for only when the plain tolerance
    refuses ``out``: it only widens the tolerance."""
    if outputs_close(out, ref_out, atol, rtol):
        return True
    slack = slack_of()
    return slack is not None and outputs_close(out, ref_out, atol, rtol, slack)


#: share of the device's free memory (when the stage starts, times the evaluation's share of the
#: device) that the copies of the checked rounds' outputs may take until the timed calls are over
KEEP_DEVICE_SHARE = 0.1
#: at most this share of the device's free memory goes to copies kept in the bytes an evaluation's
#: reservation holds idle while it times (``Job.keep_device_bytes``): eight workers of an H100
#: compared 567 of 880 checked outputs inside the lease, which then lasted 24 % longer than one
#: worker's (2026-12-06)
KEEP_FREE_CAP = 0.5
#: where the free memory cannot be read (the CPU), the copies may take this many device bytes
KEEP_DEFAULT_BYTES = 1 << 30
#: bytes per second of a copy from device memory to (pageable) host memory, on the low side: eight
#: workers copying at once share the host's memory bandwidth (an H100 call on 2026-12-06 whose
#: workers of eight copied every output that missed the device share ran level 1 about 3x slower
#: than another H100 had with the old code: most likely the copies, the host not ruled out)
HOST_COPY_BYTES_PER_S = 2e9
#: bytes per second of a check's comparison on the device (a 256 MB float16 output: 18 ms, H100)
COMPARE_BYTES_PER_S = 15e9
#: share of what is left of the child's host-memory cap (``Job.memory_mb`` less what the child grew
#: since it started) that copies moved to host memory may take
KEEP_HOST_SHARE = 0.5


class KeptOutputs:
    """Where the copies of the checked and audited rounds' outputs wait for the end of the timed calls.

    A copy stays in device memory while the device copies fit ``device_bytes``, else goes to host
    memory while the host copies fit ``host_bytes`` and copying costs less than checking
    (:meth:`worth_host`); any other is not kept (:meth:`keep` returns None) and is compared at
    once, inside the lease. Before, a worker of eight on an H100 kept nothing, and the reference's
    re-runs for its checks held the device alone for 9 of the burst's 36 s of leases (2026-12-05).
    """

    def __init__(self, device: torch.device, device_bytes: int, host_bytes: int, rerun_s: float = 0.0) -> None:
        self.device = device
        self.device_bytes = max(0, device_bytes)
        self.host_bytes = max(0, host_bytes)
        self.rerun_s = max(0.0, rerun_s)
        self.on_device = 0
        self.on_host = 0
        self.counts = {"device": 0, "host": 0, "at_once": 0}

    @classmethod
    def for_stage(cls, state: ChildState, device: torch.device, rerun_s: float) -> KeptOutputs:
        """The budgets of one evaluation's timing stage (see the constants above); ``rerun_s``: one
        untimed run of the reference through the harness's path (a check's re-run)."""
        share = min(1.0, max(0.0, state.job.device_share))
        free = placement.free_memory(device)
        device_bytes = int(KEEP_DEFAULT_BYTES if free is None else KEEP_DEVICE_SHARE * free * share)
        if free is not None and state.job.keep_device_bytes > 0:
            # The evaluation's reservation holds its judge's share idle now, less what this child
            # holds beyond its trials' peak (its arenas, the flush buffer): the copies then take no
            # more than the trials and the judge did together. Never more than part of the free memory.
            reserved = device_reserved_bytes(device.type) or 0
            held = reserved + FLUSH_BYTES - state.memory_phases.get("correctness", 0)
            idle = state.job.keep_device_bytes - max(0, held)
            device_bytes = int(max(device_bytes, min(idle, KEEP_FREE_CAP * free)))
        # on the CPU the device's memory is the host's: nothing to gain by moving copies
        host_bytes = host_allowance(state.job.memory_mb, state.start_rss) if device.type != "cpu" else 0
        return cls(device, device_bytes, host_bytes, rerun_s)

    def worth_host(self, size: int) -> bool:
        """Whether copying ``size`` bytes to host memory costs the lease less than checking at once
        (the reference's re-run and a comparison): a large output of a cheap reference (an
        elementwise task) is compared at once, a small one of a slow reference (a decoder block)
        goes to host memory."""
        return size / HOST_COPY_BYTES_PER_S < self.rerun_s + size / COMPARE_BYTES_PER_S

    def keep(self, output: Any) -> Any | None:
        """A private copy of ``output`` to compare later (see :meth:`back`), or None: compare it now."""
        size = min_bytes([], output)
        if self.on_device + size <= self.device_bytes:
            self.on_device += size
            self.counts["device"] += 1
            return detach_copy(output)
        if self.on_host + size <= self.host_bytes and self.worth_host(size):
            self.on_host += size
            self.counts["host"] += 1
            return map_tensors(output, _OnHost)
        self.counts["at_once"] += 1
        return None

    @staticmethod
    def back(kept: Any) -> Any:
        """A kept copy with every tensor on the device it came from."""
        return _from_host(kept)

    def summary(self) -> dict[str, int]:
        return dict(self.counts)


class _OnHost:
    """A tensor copied to host memory, and the device it came from."""

    __slots__ = ("device", "tensor")

    def __init__(self, tensor: torch.Tensor) -> None:
        self.device = tensor.device
        self.tensor = _TENSOR.to(_TENSOR.detach(tensor), "cpu", copy=True)


def _from_host(value: Any) -> Any:
    if isinstance(value, _OnHost):
        return _TENSOR.to(value.tensor, value.device)
    if isinstance(value, tuple):
        return tuple(_from_host(v) for v in value)
    if isinstance(value, list):
        return [_from_host(v) for v in value]
    return value


def host_allowance(memory_mb: int, start_rss: int) -> int:
    """Bytes of host memory the harness may add to the child: :data:`KEEP_HOST_SHARE` of its cap
    less its growth since it started; 0 without a cap or a reading of the resident set."""
    now = own_rss_bytes()
    if memory_mb <= 0 or start_rss <= 0 or now <= 0:
        return 0
    return int(KEEP_HOST_SHARE * max(0, memory_mb * 1024 * 1024 - (now - start_rss)))


def _watch_side_streams(state: ChildState, device: torch.device) -> Callable[[], int] | None:
    """Count Triton launches on a stream other than the one timing events are recorded on."""
    module = getattr(torch, device.type, None) if device.type != "cpu" else None
    current = getattr(module, "current_stream", None)
    if state.recorder is None or current is None:
        return None
    timing_stream = current()
    handle = getattr(timing_stream, "cuda_stream", None) or getattr(timing_stream, "npu_stream", None)
    seen = [0]

    def probe() -> None:
        if current() != timing_stream:
            seen[0] += 1

    def probe_handle(stream: Any) -> None:
        if handle is not None and isinstance(stream, int) and stream != handle:
            seen[0] += 1

    state.recorder.stream_probe = probe
    state.recorder.stream_handle_probe = probe_handle
    return lambda: seen[0]


def _bandwidth_gbps(job: Job) -> float | None:
    try:
        from ascend_kernel_gym.ascend.chips import load_chip
    except ImportError:
        return None
    try:
        if job.backend == "npu":
            return float(load_chip(job.ascend_profile).hbm_bandwidth_gbps)
        if job.backend != "cuda":
            return None
        name = torch.cuda.get_device_name(0)
        for chip in ("H200",):
            if chip in name:
                return float(load_chip(chip).hbm_bandwidth_gbps)
    except Exception:  # noqa: BLE001
        return None
    return None
