"""The timing stage in the child: sets up and runs :func:`.timing.time_side_by_side`.

:func:`run_timing` draws the rounds' input sets, builds each model's input arena
(:mod:`.placement`), wires the untimed checks of the rounds (the library snapshot after the
candidate's call, its output compared with the reference's on the same inputs, recorded audit
calls), counts side-stream launches, asks for the device's lease and records the result.

A checked round's candidate output is first compared, in its round, with the reference's output
of that round (both models ran on the same set; small tensors whole, large ones at a random
sample of places): within the plain tolerance, it is done. Otherwise, and for the audited calls
(candidate code that runs after the reference's call), the output is kept and compared once the
timed calls are over and the lease is given back with the reference run again on the round's set
(:mod:`.kept_outputs`: small tensors whole, large ones as a random sample of their elements; in
device memory, else host memory, else compared at once, inside the lease). That comparison asks
for the reference's rounding slack only when the plain tolerance refuses the output (the slack
only widens it).

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

from ascend_kernel_gym.evaluation import cuda_sync, device_gate, placement
from ascend_kernel_gym.evaluation.correctness import (
    call_candidate,
    enter_candidate_call,
    reference_slack,
    run_reference,
)
from ascend_kernel_gym.evaluation.errors import StageError, candidate_failure
from ascend_kernel_gym.evaluation.inputs import clone_inputs, make_inputs
from ascend_kernel_gym.evaluation.job import Job
from ascend_kernel_gym.evaluation.kept_outputs import KeptOutputs, kept_matches, matches_reference
from ascend_kernel_gym.evaluation.outputs import OutputCheckError, detach_copy, plain_output
from ascend_kernel_gym.evaluation.placement import min_bytes
from ascend_kernel_gym.evaluation.result import ErrorType
from ascend_kernel_gym.evaluation.snapshot import check_snapshot
from ascend_kernel_gym.evaluation.state import ChildState
from ascend_kernel_gym.evaluation.timing import FLUSH_BYTES, WARMUP_S, TimingResult, time_side_by_side

IMPLAUSIBLE_SPEEDUP = 10.0
_TENSOR = torch.Tensor


def _in_reference_state(reference: Any) -> Callable[..., Any]:
    """``reference`` called with grad mode off (every timed call too); the harness's other settings
    are put in place before each call, untimed (``start_clean`` of :func:`.timing.time_side_by_side`)."""

    def call(*inputs: Any) -> Any:
        with torch.no_grad():
            return reference(*inputs)

    return call


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

    def check_output(out: Any, k: int, kept: bool = False) -> None:
        """``out``: the round's whole output, or what :class:`KeptOutputs` kept of it (``kept``)."""
        ref_out = reference_output(k)

        def slack() -> Any:
            with spending("reference_reruns"):
                return reference_slack(state, reference, source[k], ref_out)

        started, reruns = time.perf_counter(), spent["reference_reruns"]
        close = (kept_matches if kept else matches_reference)(out, ref_out, atol, rtol, slack)
        spent["compare"] += time.perf_counter() - started - (spent["reference_reruns"] - reruns)
        if not close:
            raise StageError(
                ErrorType.VALUE_MISMATCH,
                "the output changed during timing (a result cached across calls, or work skipped once timing "
                "started); compute the output from the inputs on every call",
            )

    # The checked and audited rounds' outputs are compared with the reference's once the timed
    # calls are over (and the device's lease is given back), each where its copy fits.
    keeper = KeptOutputs.for_stage(state, device, rerun_s, rng.getrandbits(62))
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
        # Both models ran on set k in this round: an output within the plain tolerance of the
        # reference's needs no re-run of the reference later. (A call after the reference's that
        # wrote over its output could as well have copied it.) The audit call that may follow is
        # untimed, where a search of device memory costs nothing: its output takes the re-run path.
        ref_out = arenas["reference"].last_output_on(k)
        if ref_out is not None:
            with spending("compare"):
                if keeper.agrees(out, ref_out, atol, rtol):
                    return
        check_later(out, k)

    # Only kernels that spill use the context's local memory enough for its place to matter;
    # moving it costs a reallocation of up to a few hundred MB each time.
    spills = state.recorder.max_spills if state.recorder is not None else 0
    local_memory = placement.LocalMemory.for_device(device, rng) if spills > 0 else None
    gate, no_gate = device_gate.ready()
    spin_here = cuda_sync.spinning if device.type == "cuda" else contextlib.nullcontext
    set_up = time.perf_counter()
    try:
        side_streams = _watch_side_streams(state, device)
        with torch.no_grad(), spin_here():
            timing = time_side_by_side(
                arenas["candidate"].prepare,
                arenas["reference"].prepare,
                timed_part(audit),
                device_type=device.type,
                num_sets=job.profile_reps,  # a fresh input set in every round
                reps=job.profile_reps,
                warmup=job.profile_warmup,
                # Where workers share the device its neighbours keep it busy, its clocks up: the
                # warm-up is its calls only. Its time floor brings an idle device up, and on a
                # shared device it was device time taken from the other evaluations, outside the lease.
                warmup_s=WARMUP_S if job.device_share >= 1.0 else 0.0,
                rng=rng,
                flush_bytes=FLUSH_BYTES if device.type != "cpu" else 1 << 20,
                after_candidate=timed_part(after_candidate),
                check=timed_part(check),
                side_stream_launches=side_streams,
                relocate=local_memory.move if local_memory is not None else None,
                quiet=state.link.wait_quiet if state.link is not None else None,
                gate=gate if device.type == "cuda" else None,
                budget_s=job.profile_budget_s,
                # every call of either model starts as the recorded calls do (collected, collector
                # off, the harness's settings), untimed, so no call can tell a timed round from a
                # trial or an audit; run after a device synchronize, so nothing a finaliser of the
                # candidate's launches can overlap a window
                start_clean=enter_candidate_call,
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
            check_output(KeptOutputs.back(out), k, kept=True)
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
    if device.type == "cuda":
        result.timing["cuda_sync"] = cuda_sync.state()
    result.timing["phase_s"] = {
        "setup": round(set_up - started, 4),
        **result.timing.get("phase_s", {}),
        "after_timing": round(time.perf_counter() - timed, 4),
        **{name: round(seconds, 4) for name, seconds in spent.items()},
    }
    if timing.quiet is not None:
        result.timing["quiet_wait_s"], result.timing["quiet_granted"] = timing.quiet
    result.warnings.extend(plausibility_warnings(timing, first, first_out, _bandwidth_gbps(job)))


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
