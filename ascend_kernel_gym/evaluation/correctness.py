"""The correctness stage: trials on fresh hidden inputs, the candidate checked against the reference.

Each trial draws its inputs (:mod:`.inputs`), calls the candidate on a private copy with the
launch / operator recorder on (:func:`call_candidate`: its own Triton kernels must launch,
PyTorch must not compute the result, the output is frozen before any other candidate code can
run), runs the reference on another copy (:func:`run_reference`), and compares (:mod:`.compare`):
structure, device, shape and dtype first, then values, then whether an input was changed in
place or the output aliases an input. Trial 0 also calls the candidate twice on the same inputs
(``nondeterministic``); an output that stays the same while the reference's changes is
``input_independent``. The checked call and the reference run are shared with the later stages.

Imports torch: only the zygote and its children import this module.
"""

from __future__ import annotations

import contextlib
import copy
import gc
import random
import time
from dataclasses import dataclass, field
from typing import Any

import torch

from ascend_kernel_gym.evaluation.compare import (
    all_finite,
    compare,
    has_low_precision,
    inputs_equal,
    outputs_close,
    outputs_identical,
    precision_slack,
    upcast,
)
from ascend_kernel_gym.evaluation.errors import (
    REFERENCE_BROKE_DEVICE,
    StageError,
    candidate_failure,
    classify_exception,
)
from ascend_kernel_gym.evaluation.input_copies import copied_input_piece
from ascend_kernel_gym.evaluation.inputs import clone_inputs, make_inputs, trial_distribution
from ascend_kernel_gym.evaluation.outputs import (
    OutputCheckError,
    check_output_tensors,
    detach_copy,
    flatten_outputs,
    output_leaves,
    plain_output,
)
from ascend_kernel_gym.evaluation.recorder import Recorder, is_allowed
from ascend_kernel_gym.evaluation.result import ErrorType, Stage
from ascend_kernel_gym.evaluation.sandbox_rules import FILL_TORCH_OPS
from ascend_kernel_gym.evaluation.snapshot import check_snapshot
from ascend_kernel_gym.evaluation.state import ChildState
from ascend_kernel_gym.evaluation.tensors import storage_nbytes, storage_ptr, storage_ptrs


@dataclass
class CandidateCall:
    """What one recorded call of the candidate left, frozen before any other code of it can run."""

    #: a private copy of the output (plain tuples / lists of cloned tensors)
    output: Any
    #: per output tensor or scalar (depth-first): shares storage with an input, a parameter or a buffer
    aliased: list[bool] = field(default_factory=list)
    #: the inputs as the call left them: copies of those it changed, the pristine inputs otherwise
    inputs_after: list[Any] | None = None
    #: indexes of the inputs the call changed
    changed: list[int] = field(default_factory=list)


def call_candidate(
    state: ChildState, candidate: Any, inputs: list[Any], first: bool, pristine: list[Any] | None = None
) -> CandidateCall:
    """Call the candidate on ``inputs`` with the recorder on, check the call, freeze its result.

    From the moment ``forward`` returns until the output is copied (and, with ``pristine``, the
    copies of the inputs, the aliasing and input-change state taken), no code of the candidate
    runs: the garbage collector is off (no finalisers), the output's structure is copied inside
    the recorded call from exact tuples / lists only (``outputs.plain_output``), and the
    model's parameters and buffers are found without calling any of its methods.
    """
    recorder = state.recorder
    assert recorder is not None
    gc.enable()
    try:
        return _recorded_call(state, recorder, candidate, inputs, first, pristine)
    finally:
        gc.enable()


def _recorded_call(
    state: ChildState, recorder: Recorder, candidate: Any, inputs: list[Any], first: bool, pristine: list[Any] | None
) -> CandidateCall:
    bad_output: OutputCheckError | None = None
    try:
        with (
            torch.no_grad(),
            state.redirect or contextlib.nullcontext(),
            recorder.recording_forward(inputs) as stats,
        ):
            out = candidate(*inputs)
            gc.disable()
            try:
                out = plain_output(out)
            except OutputCheckError as problem:
                out, bad_output = None, problem
        if state.job.backend in ("cuda", "npu"):
            getattr(torch, state.job.backend).synchronize()
    except StageError:
        raise
    except BaseException as exc:  # noqa: BLE001 - candidate code
        prefix = "the first call of ModelNew.forward failed: " if first else "ModelNew.forward failed: "
        raise candidate_failure(exc, prefix, state.candidate_file) from None
    if state.snapshot is not None:
        check_snapshot(state.snapshot)
    if stats.launches == 0:
        raise StageError(
            ErrorType.NO_KERNEL_LAUNCHED,
            "ModelNew.forward returned without launching any of your @triton.jit kernels "
            f"({', '.join(state.job.kernels) or 'none found'}); the work must be done by your Triton kernel, "
            "launched as kernel[grid](...) on every call",
        )
    bad_ops = sorted(op for op in stats.ops if not is_allowed(op))
    if bad_ops:
        scalar_note = (
            " (reading tensor values into Python, .item() / float(t), counts as computing)"
            if any("_local_scalar_dense" in op for op in bad_ops)
            else ""
        )
        raise StageError(
            ErrorType.TORCH_FALLBACK,
            "PyTorch computed part of the result inside ModelNew.forward: "
            + ", ".join(f"{op} (x{stats.ops[op]})" for op in bad_ops[:12])
            + ". Only allocation, views and copies may run outside your Triton kernels"
            + scalar_note
            + ".",
        )
    # The type checks come after the hack checks: an odd output type never hides a fallback.
    try:
        if bad_output is not None:
            raise bad_output
        tensors = check_output_tensors(out)
    except OutputCheckError as problem:
        raise StageError(ErrorType(problem.kind), problem.message) from None
    out_ptrs = {storage_ptr(t) for t in tensors if t.device.type != "meta" and storage_nbytes(t)}
    for ptr in out_ptrs:
        if ptr in stats.tainted and stats.tainted[ptr] != "an input":  # returning an input: aliasing check
            raise StageError(
                ErrorType.TORCH_FALLBACK,
                f"the output holds data PyTorch moved without your kernel ({stats.tainted[ptr]}); the output must be "
                "written by your Triton kernel (casting or concatenating your kernels' results is fine)",
            )
    for tensor in tensors:
        if not torch.Tensor.is_contiguous(tensor) and copied_input_piece(tensor, stats.input_bytes):
            raise StageError(
                ErrorType.TORCH_FALLBACK,
                "the output is a rearranged view of memory holding an unchanged copy of an input: the kernel only "
                "copied the data and a view did the task's work; write the result with your Triton kernel",
            )
    for op, ptr, full in stats.writes:
        if ptr not in out_ptrs:
            continue
        if op in FILL_TORCH_OPS and not full:
            raise StageError(
                ErrorType.TORCH_FALLBACK,
                f"parts of the output were written by PyTorch (aten.{op} on a slice); write the result from your "
                "kernel (filling the whole output before a kernel accumulates into it is fine)",
            )
    return _freeze(out, inputs, candidate, pristine)


def _freeze(out: Any, inputs: list[Any], candidate: Any, pristine: list[Any] | None) -> CandidateCall:
    """Copy what the checks need from a call (the collector is still off)."""
    try:
        call = CandidateCall(detach_copy(out))
    except Exception as exc:  # noqa: BLE001 - e.g. no memory for the copy of a huge output
        kind = classify_exception(exc)
        raise StageError(
            kind if kind == ErrorType.OOM else ErrorType.RUNTIME_ERROR,
            f"the output could not be copied for checking: {type(exc).__name__}: {str(exc)[:300]}",
        ) from None
    if pristine is None:
        return call
    shared = storage_ptrs(inputs) | storage_ptrs(candidate)
    call.aliased = [
        type(leaf) is torch.Tensor
        and leaf.device.type != "meta"
        and storage_nbytes(leaf) > 0
        and storage_ptr(leaf) in shared
        for _, leaf in output_leaves(out)
    ]
    try:
        call.changed = inputs_equal(inputs, pristine)
        call.inputs_after = [
            clone_inputs([x])[0] if i in call.changed else p
            for i, (x, p) in enumerate(zip(inputs, pristine, strict=False))
        ]
    except Exception as exc:  # noqa: BLE001 - the candidate left an input in a state no copy or compare takes
        raise StageError(
            ErrorType.INPUT_MUTATED,
            f"ModelNew.forward left an input argument unreadable ({type(exc).__name__}: {str(exc)[:200]}); inputs "
            "must be left unchanged",
        ) from None
    return call


def run_reference(state: ChildState, reference: Any, inputs: list[Any]) -> Any:
    """Run the reference, and keep candidate code from running until the candidate's next call.

    Pending finalisers of candidate objects run first (``gc.collect``), the library snapshot is
    checked, and the garbage collector stays off until the next candidate call, so a patch that
    a candidate object installs or removes from a finaliser cannot act on the reference or the
    checks.
    """
    backend = state.job.backend
    gc.collect()
    if state.snapshot is not None:
        check_snapshot(state.snapshot)
    gc.disable()
    try:
        with torch.no_grad(), state.redirect or contextlib.nullcontext():
            out = reference(*inputs)
        if backend in ("cuda", "npu"):
            getattr(torch, backend).synchronize()
    except BaseException as exc:  # noqa: BLE001
        kind = classify_exception(exc)
        if kind != ErrorType.OOM:
            kind = ErrorType.RUNTIME_ERROR
        raise StageError(
            kind, f"the reference model failed after your code had run: {type(exc).__name__}: {str(exc)[:300]}"
        ) from None
    return out


def _device_usable(backend: str) -> bool:
    """Whether the device still runs work (a device-side assert leaves a context that cannot)."""
    if backend not in ("cuda", "npu"):
        return True
    try:
        probe = torch.ones(2, device=backend)
        getattr(torch, backend).synchronize()
        return float(probe.sum().item()) == 2.0
    except Exception:  # noqa: BLE001 - any failure means the context is gone
        return False


def run_correctness(
    state: ChildState, task_module: Any, reference: Any, candidate: Any, device: torch.device, rng: random.Random
) -> None:
    job, result = state.job, state.result
    atol, rtol = job.task.atol, job.task.rtol
    result.trials_total = job.num_trials
    if job.task_inputs_only:
        result.warnings.append(
            "every correctness trial used the task's own input distribution: the task's reference fails on the "
            "device for other values (a device-side check such as binary_cross_entropy's input range)"
        )
    first_call = True
    previous: tuple[Any, Any] | None = None  # (candidate output, reference output) of an earlier trial
    fallback_next = False
    attempts = 0
    trial = 0
    max_abs = max_rel = 0.0
    while trial < job.num_trials:
        attempts += 1
        if attempts > job.num_trials * 3:
            raise StageError(
                ErrorType.HARNESS_ERROR,
                "the task's reference fails (raises, or returns non-finite values) on the task's own inputs",
            )
        distribution = "task" if fallback_next or job.task_inputs_only else trial_distribution(trial, rng)
        fallback_next = False
        seed = rng.getrandbits(62)
        base = make_inputs(task_module, seed, distribution, device)
        cand_inputs = clone_inputs(base)
        first_started = time.perf_counter()
        call = call_candidate(state, candidate, cand_inputs, first_call, base)
        snap_c = call.output
        if first_call:
            result.stage_durations["compile.first_call"] = round(time.perf_counter() - first_started, 4)
            first_call = False
            # What compiling left behind is permanent from here: the collection before every
            # reference call (which runs candidate finalisers) then scans only newer objects.
            gc.collect()
            gc.freeze()
            result.compiled = True
            state.stage(Stage.CORRECTNESS)
        if trial == 0:
            # Same inputs again: the output must not change.
            snap_again = call_candidate(state, candidate, clone_inputs(base), False).output
        ref_inputs = clone_inputs(base)
        try:
            out_r = run_reference(state, reference, ref_inputs)
        except StageError as failure:
            if distribution == "task" or failure.error_type != ErrorType.RUNTIME_ERROR:
                raise
            if not _device_usable(job.backend):
                raise StageError(
                    ErrorType.HARNESS_ERROR, f"{REFERENCE_BROKE_DEVICE} ({distribution}): {failure.message}"
                ) from None
            fallback_next = True  # the reference refuses these values (a domain check): the task's own
            continue
        if distribution != "task" and not all_finite(out_r):
            fallback_next = True  # this distribution breaks the reference: redo with the task's own
            continue
        pairs, changed = _checked_pairs(snap_c, out_r, call, ref_inputs)
        slack = reference_slack(state, reference, base, out_r) or [None] * len(pairs)
        if changed and all(
            compare(cand_t, ref_t, atol, rtol, ref_slack).ok
            for (cand_t, ref_t, _), ref_slack in zip(pairs, slack, strict=False)
        ):
            raise StageError(
                ErrorType.INPUT_MUTATED,
                f"ModelNew.forward modified its input argument(s) {changed} in place (its output is otherwise "
                "correct); inputs must be left unchanged",
            )
        # An input changed and the output is wrong too: most likely an honest mistake (an
        # argument order that makes the kernel write into an input), so the output's own failure
        # is reported, with a note. Nothing is gained by it: a wrong output fails anyway.
        note = _mutation_note(changed)
        try:
            if trial == 0 and not outputs_close(snap_again, snap_c, atol, rtol):
                raise StageError(
                    ErrorType.NONDETERMINISTIC,
                    "ModelNew.forward gave different outputs for the same inputs on two calls "
                    "(race condition, uninitialised memory, or state kept between calls)",
                )
            if (
                previous is not None
                and outputs_identical(snap_c, previous[0])
                and not outputs_close(out_r, previous[1], atol, rtol)
            ):
                raise _input_independent()
            for (cand_t, ref_t, label), ref_slack in zip(pairs, slack, strict=False):
                cmp = compare(cand_t, ref_t, atol, rtol, ref_slack)
                if cmp.ok:
                    max_abs = max(max_abs, cmp.max_abs_err)
                    max_rel = max(max_rel, cmp.max_rel_err)
                    continue
                if cmp.nonfinite:
                    raise StageError(
                        ErrorType.NAN_OR_INF,
                        f"{label} contains NaN or Inf where the reference is finite (first at index "
                        f"{tuple(cmp.first_bad_index)}: got {cmp.cand_value}, expected {cmp.ref_value}); "
                        f"{cmp.bad_count} of {cand_t.numel()} elements are wrong (trial {trial + 1})",
                        max_abs_err=cmp.max_abs_err,
                        max_rel_err=cmp.max_rel_err,
                        trials_passed=trial,
                    )
                if previous is None and _probe_input_independent(
                    state, task_module, reference, candidate, device, rng, snap_c, out_r
                ):
                    raise _input_independent()
                raise StageError(
                    ErrorType.VALUE_MISMATCH,
                    f"{label} does not match the reference (trial {trial + 1} of {job.num_trials}): "
                    f"max abs error {cmp.max_abs_err:.3g}, max rel error {cmp.max_rel_err:.3g}, "
                    f"{cmp.bad_count} of {cand_t.numel()} elements {_tolerance_text(ref_t, atol, rtol, ref_slack)}; "
                    f"first bad index {tuple(cmp.first_bad_index)}: got {cmp.cand_value:.6g}, "
                    f"expected {cmp.ref_value:.6g}",
                    max_abs_err=cmp.max_abs_err,
                    max_rel_err=cmp.max_rel_err,
                    trials_passed=trial,
                )
        except StageError as failure:
            raise _with_note(failure, note) from None
        previous = (snap_c, detach_copy(out_r))
        trial += 1
        result.trials_passed = trial
    result.max_abs_err = max_abs
    result.max_rel_err = max_rel
    result.correct = True


def _tolerance_text(ref: torch.Tensor, atol: float, rtol: float, slack: Any) -> str:
    if not (torch.Tensor.is_floating_point(ref) or torch.Tensor.is_complex(ref)):
        return "differ (integer and boolean outputs must match exactly)"
    rounding = " + the reference rounding error" if slack is not None else ""
    return f"outside atol={atol:g} + rtol={rtol:g}*|expected|{rounding}"


def _mutation_note(changed: list[int]) -> str:
    if not changed:
        return ""
    return (
        f"\nNote: ModelNew.forward also modified its input argument(s) {changed} in place. Check the argument "
        "order of your kernel launch: the kernel may be storing into an input instead of the output."
    )


def _with_note(failure: StageError, note: str) -> StageError:
    if not note:
        return failure
    return StageError(failure.error_type, failure.message + note, hack=failure.hack, **failure.metrics)


def reference_slack(state: ChildState, reference: Any, inputs: list[Any], out_r: Any) -> list[Any] | None:
    """The float16 / bfloat16 reference's own rounding error, from the same model run in float32.

    Runs right after the reference (the library snapshot was just checked, the collector is
    off); anything going wrong here only means no slack, never a failed candidate.
    """
    if state.reference_hi is False or not has_low_precision(out_r):
        return None
    backend = state.job.backend
    try:
        if state.reference_hi is None:
            state.reference_hi = (
                torch.nn.Module.float(copy.deepcopy(reference)) if isinstance(reference, torch.nn.Module) else False
            )
            if state.reference_hi is False:
                return None
        with torch.no_grad(), state.redirect or contextlib.nullcontext():
            out_hi = state.reference_hi(*upcast(clone_inputs(inputs)))
        if backend in ("cuda", "npu"):
            getattr(torch, backend).synchronize()
        return precision_slack(out_r, out_hi)
    except Exception:  # noqa: BLE001 - a reference that cannot run in float32 gets no slack
        state.reference_hi = False
        return None


def _input_independent() -> StageError:
    return StageError(
        ErrorType.INPUT_INDEPENDENT,
        "ModelNew.forward returned the same output for different inputs while the reference's output changed "
        "(a constant, or a result cached across calls); compute the output from the inputs every call",
    )


def _probe_input_independent(
    state: ChildState,
    task_module: Any,
    reference: Any,
    candidate: Any,
    device: torch.device,
    rng: random.Random,
    snap_c: Any,
    out_r: Any,
) -> bool:
    """After a first-trial mismatch: does the candidate ignore its inputs?"""
    base = make_inputs(task_module, rng.getrandbits(62), "task", device)
    other_c = call_candidate(state, candidate, clone_inputs(base), False).output
    other_r = run_reference(state, reference, clone_inputs(base))
    return outputs_identical(other_c, snap_c) and not outputs_close(
        other_r, out_r, state.job.task.atol, state.job.task.rtol
    )


def _checked_pairs(
    snap_c: Any, out_r: Any, call: CandidateCall, ref_inputs: list[Any]
) -> tuple[list[tuple[torch.Tensor, torch.Tensor, str]], list[int]]:
    """Pair the candidate's output (copy) with the reference's and check everything but values.

    Returns the pairs and the indexes of the inputs the candidate changed (compared with the
    reference's inputs after its own run); the caller decides whether that is ``input_mutated``.
    """
    try:
        pairs = flatten_outputs(snap_c, out_r)
    except OutputCheckError as problem:
        raise StageError(ErrorType(problem.kind), problem.message) from None
    for (_, _, label), shared in zip(pairs, call.aliased, strict=False):
        if shared:
            raise StageError(
                ErrorType.OUTPUT_ALIASES_INPUT,
                f"{label} shares memory with an input or a parameter of the model; return a new tensor "
                "written by your kernel",
            )
    # Changed by the candidate, and not the way the reference changes it (a reference may work in
    # place, ``nn.ReLU(inplace=True)``: the candidate may then do the same or leave the input alone).
    changed = [i for i in inputs_equal(call.inputs_after or [], ref_inputs) if i in call.changed]
    note = _mutation_note(changed)
    for cand_t, ref_t, label in pairs:
        if cand_t.device.type != ref_t.device.type:
            raise StageError(
                ErrorType.DEVICE_MISMATCH,
                f"{label} is on {cand_t.device.type}, the reference output is on {ref_t.device.type}" + note,
            )
        if tuple(cand_t.shape) != tuple(ref_t.shape):
            raise StageError(
                ErrorType.SHAPE_MISMATCH,
                f"{label} has shape {tuple(cand_t.shape)}, expected {tuple(ref_t.shape)}" + note,
            )
        if cand_t.dtype != ref_t.dtype:
            raise StageError(
                ErrorType.DTYPE_MISMATCH,
                f"{label} has dtype {str(cand_t.dtype).replace('torch.', '')}, expected "
                f"{str(ref_t.dtype).replace('torch.', '')}" + note,
            )
    return pairs, changed
