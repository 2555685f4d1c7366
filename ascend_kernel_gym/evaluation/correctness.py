"""The correctness stage, candidate side: the candidate run on the judge's trials, its outputs shipped out.

The child asks the judge (:mod:`.judge`, in the zygote) for the plan: a seed and an input
distribution per trial, drawn by the reference child, which has already run the reference on the
same inputs (with a deferred plan, :attr:`.job.Job.defer_plan`, the child makes trial 1's first
call before it asks). Per trial it draws the inputs (:mod:`.inputs`), calls the candidate on a
private copy with the launch / operator recorder on (:func:`call_candidate`: its own Triton
kernels must launch, PyTorch must not compute the result, the output is frozen before any other
candidate code can run; trial 0 calls it twice), and ships the output, the inputs it changed and
which outputs alias an input as plain bytes (:mod:`.tensor_wire`). The comparison happens in the
judge; this process never holds a reference output of a trial. :func:`call_candidate`,
:func:`run_reference` and :func:`reference_slack` also serve the later stages (their audits run in
this child).

Imports torch: only the zygote and its children import this module.
"""

from __future__ import annotations

import contextlib
import copy
import gc
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

from ascend_kernel_gym.evaluation import torch_globals
from ascend_kernel_gym.evaluation.compare import inputs_equal
from ascend_kernel_gym.evaluation.compile_stage import construct_candidate
from ascend_kernel_gym.evaluation.errors import StageError, candidate_failure, classify_exception
from ascend_kernel_gym.evaluation.feedback import scrub_text
from ascend_kernel_gym.evaluation.input_copies import copied_input_piece
from ascend_kernel_gym.evaluation.inputs import DISTRIBUTION_TEXT, clone_inputs, first_trial_seed, make_inputs
from ascend_kernel_gym.evaluation.outputs import (
    OutputCheckError,
    check_output_tensors,
    detach_copy,
    output_leaves,
    plain_output,
)
from ascend_kernel_gym.evaluation.param_vary import (
    draw_values,
    floating_slots,
    snapshot,
    write_candidate,
    write_reference,
)
from ascend_kernel_gym.evaluation.precompile_run import CASE_WAIT_S, ENDED, wait_for_mark
from ascend_kernel_gym.evaluation.recorder import Recorder, is_allowed
from ascend_kernel_gym.evaluation.result import ErrorType, Stage
from ascend_kernel_gym.evaluation.shape_trials import build_case, case_text, extra_cases
from ascend_kernel_gym.evaluation.snapshot import check_snapshot
from ascend_kernel_gym.evaluation.state import ChildState
from ascend_kernel_gym.evaluation.tensor_wire import Exporter, WireError, encode_payload_parts, encode_tree
from ascend_kernel_gym.evaluation.tensors import storage_nbytes, storage_ptr, storage_ptrs
from ascend_kernel_gym.evaluation.view_cover import cover, spans_meet, view_of
from ascend_kernel_gym.evaluation.wire import CONTINUE, PROBE, STARTED, TRIAL_DONE


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
    #: the output holds data PyTorch copied from an input (the input-copy taint; see :func:`call_candidate`)
    copy_taint: StageError | None = None


def call_candidate(
    state: ChildState,
    candidate: Any,
    inputs: list[Any],
    first: bool,
    pristine: list[Any] | None = None,
    *,
    check_copy_taint: bool = True,
) -> CandidateCall:
    """Call the candidate on ``inputs`` with the recorder on, check the call, freeze its result.

    The garbage collector is off during the call: a collection could otherwise start inside the
    recorder's own operator handler (or Triton's argument copies), where PyTorch has the recording
    mode off, and a finaliser of the candidate's would compute there unseen. Cycles made during the
    call are collected when ``forward`` returns, with the recorder still on (their finalisers'
    operators count as the candidate's). From then until the output is copied (and, with
    ``pristine``, the copies of the inputs, the aliasing and input-change state taken), no code of
    the candidate runs: the output's structure is copied inside the recorded call from exact tuples /
    lists only (``outputs.plain_output``), and the model's parameters and buffers are found without
    calling any of its methods.

    An output holding data PyTorch copied from an input (the input-copy taint) is ``torch_fallback``;
    with ``check_copy_taint`` false the caller decides (``CandidateCall.copy_taint``).
    """
    recorder = state.recorder
    assert recorder is not None
    enter_candidate_call()
    try:
        call = _recorded_call(state, recorder, candidate, inputs, first, pristine)
    finally:
        gc.enable()
    if call.copy_taint is not None and check_copy_taint:
        raise call.copy_taint
    return call


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
            errors_before = len(recorder.launch_errors)
            out = candidate(*inputs)
            if recorder.check_failure is not None:  # caught by the candidate's code: still the harness's
                raise recorder.check_failure
            swallowed = recorder.swallowed_launch_error(errors_before)
            if swallowed is not None:
                recorder.refuse(swallowed)
            gc.collect(0)  # what the call left in cycles (the collector was off: all in the youngest generation)
            try:
                out = plain_output(out)
            except OutputCheckError as problem:
                out, bad_output = None, problem
        if state.job.backend in ("cuda", "npu"):
            getattr(torch, state.job.backend).synchronize()
    except StageError:
        raise
    except BaseException as exc:  # noqa: BLE001 - candidate code
        if recorder.check_failure is not None:  # one of the harness's checks failed inside the call
            raise recorder.check_failure from None
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
    placed = [(t, storage_ptr(t)) for t in tensors if t.device.type != "meta" and storage_nbytes(t)]
    copy_taint = _copy_taint(stats, tensors, placed)
    for op, ptr, filled in stats.writes:  # fills, also factory operators writing into old memory (out=)
        for tensor, out_ptr in placed:
            if out_ptr == ptr and cover(filled, view_of(tensor)) == "partial":
                raise StageError(
                    ErrorType.TORCH_FALLBACK,
                    f"parts of the output were written by PyTorch (aten.{op} on part of it); write the result from "
                    "your kernel (filling the whole output before a kernel accumulates into it is fine)",
                )
    call = _freeze(out, inputs, candidate, pristine)
    call.copy_taint = copy_taint
    return call


def _copy_taint(stats: Any, tensors: list[torch.Tensor], placed: list[tuple[torch.Tensor, int]]) -> StageError | None:
    """The input-copy taint's failure for the call's output tensors, if any."""
    for tensor, ptr in placed:
        taint = stats.tainted.get(ptr)
        if taint is None or taint == "an input":  # returning an input: the aliasing check's
            continue
        spans = stats.taint_spans.get(ptr)
        if spans is None or any(spans_meet(span, view_of(tensor).byte_span()) for span in spans):
            return StageError(
                ErrorType.TORCH_FALLBACK,
                f"the output holds data PyTorch moved without your kernel ({taint}); the output must be "
                "written by your Triton kernel (casting or concatenating your kernels' results is fine)",
            )
    for tensor, ptr in placed:
        if stats.tainted.get(ptr) == "an input":
            continue
        what = stats.samples.found_in(tensor, stats.input_bytes)
        if what is not None:
            return StageError(
                ErrorType.TORCH_FALLBACK,
                f"the output holds data PyTorch moved without your kernel ({what}), passed on through other "
                "memory or your kernels; the output must be computed by your Triton kernel",
            )
    for tensor in tensors:
        if not torch.Tensor.is_contiguous(tensor) and copied_input_piece(tensor, stats.input_bytes):
            return StageError(
                ErrorType.TORCH_FALLBACK,
                "the output is a rearranged view of memory holding an unchanged copy of an input: the kernel only "
                "copied the data and a view did the task's work; write the result with your Triton kernel",
            )
    return None


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


@contextlib.contextmanager
def reference_torch_state() -> Iterator[None]:
    """PyTorch's process-wide settings for a call of the reference as the harness had them before
    any code of the candidate's ran (:mod:`.torch_globals`: default dtype, determinism, anomaly
    detection, matmul precision, cuDNN and attention backends, autocast, threads), whatever the
    candidate's code left behind, and grad mode off (no graph, so no saved-tensor hook runs).
    Restored after.

    The timing stage's reference runs in the candidate's process: a ``forward`` that switched grad
    mode, anomaly detection and a saved-tensor hook on after its own work made every later
    reference call build a graph and run the hook (8x slower), and one that held
    ``sdpa_kernel([SDPBackend.MATH])`` open in a suspended generator kept an attention reference
    on its slowest path (10-20x): a higher speedup for the same kernel (red team, 2026-12-05).
    """
    with torch_globals.harness_settings(), torch.no_grad():
        yield


def enter_candidate_call() -> None:
    """What every call of either model starts from, recorded or timed: pending finalisers collected,
    the collector off, the harness's PyTorch settings in place.

    A ``forward`` that could tell a recorded call (a trial, an audit) from a timed one could run its
    kernel in the former and PyTorch in the latter: a generator left in a reference cycle whose
    ``finally`` ran inside timed calls only, where the collector was on, did (red team of
    2026-12-05, night).

    What survives the collection is frozen (:func:`gc.freeze`), so the next call's collection
    scans only what was made since: a full collection of everything since the compile stage's
    freeze took about 0.3 ms before each of a timing stage's 200 calls on an H100 host, with the
    device idle. Every call starts this way, so a cycle that becomes garbage after surviving a
    call is never collected in this process, whichever kind of call comes next.
    """
    gc.collect()
    gc.freeze()
    gc.disable()
    torch_globals.harness().restore()


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
        with reference_torch_state(), state.redirect or contextlib.nullcontext():
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


def run_correctness(
    state: ChildState, task_module: Any, reference: Any, candidate: Any, device: torch.device, rng: random.Random
) -> None:
    """Run the candidate on every trial of the judge's plan and ship each trial to the judge.

    The verdict is the judge's (:mod:`.judge`, in the zygote): a failed trial gets no answer, the
    zygote ends this process and reports the failure. The reference's outputs are computed in the
    reference child (the seeds come with the plan); ``reference`` here only takes the trials' varied
    parameters alongside the candidate (the later stages compare against it). ``rng`` is not used.
    """
    job, result = state.job, state.result
    result.trials_total = job.num_trials
    if job.task_inputs_only:
        result.warnings.append(
            "every correctness trial used the task's own input distribution: the task's reference fails on the "
            "device for other values (a device-side check such as binary_cross_entropy's input range)"
        )
    if state.judge is None:
        raise StageError(ErrorType.HARNESS_ERROR, "the correctness stage has no judge")
    progress = _Progress(state.link, job.backend)  # the candidate is built: the compile stage is over
    # With a deferred plan the reference child runs the reference only once this child asks for
    # the plan: trial 1's first call comes first, so a candidate that fails it costs no reference run.
    ahead = _first_trial_ahead(state, task_module, candidate, device) if job.defer_plan else None
    first_call = ahead is None
    plan = state.judge.request_plan()
    # Until now the reference child built the plan next to this child's compile stage; from here it
    # holds only what it judges with (:func:`.memory_book.measured_need`).
    state.memory_phase("compile")
    progress.send(STARTED)  # the plan is in (a judge in this process built it: the harness's time)
    if not isinstance(plan, dict) or not isinstance(plan.get("trials"), list):
        raise StageError(ErrorType.HARNESS_ERROR, "the judge sent no trial plan")
    if plan.get("profile") != result.profile:
        raise StageError(
            ErrorType.HARNESS_ERROR,
            f"the reference child evaluated profile {plan.get('profile')!r}, this child {result.profile!r}",
        )
    result.warnings.extend(str(note)[:500] for note in list(plan.get("notes") or [])[:16])
    params = ParameterTrials(reference, candidate)
    cases = ShapeCases(state, device)
    taint_ignored = False  # said once in the warnings
    for index, trial in enumerate(plan["trials"]):
        model, module = candidate, task_module
        case = str(trial.get("case") or "main")
        if case != "main":
            model, module = cases.models(case)
        missing = params.set_for(trial.get("params"))
        if missing:
            result.warnings.append(
                f"trial {index + 1} varied the model's parameters and buffers, but ModelNew has no parameter or "
                f"buffer named {', '.join(repr(m) for m in missing[:5])} of the reference's shape: the evaluator "
                "hands the reference's values to ModelNew by name, so keep the reference's names and shapes"
            )
        distribution = str(trial["distribution"])
        # Exact zeros make much honest math the identity (x + 0, x * 1 after a fp32 upcast); copying
        # PyTorch's copy gains nothing there: every other trial and the timing stage's audits check it.
        taint_checked = distribution != "zeros"
        label = str(trial.get("label") or "")
        if index == 0 and ahead is not None and ahead.is_trial(trial):
            base, call = ahead.base, ahead.call  # its checks passed before the plan came
            ahead = None
        else:
            base = make_inputs(module, int(trial["seed"]), distribution, device)
            first_started = time.perf_counter()
            try:
                call = call_candidate(
                    state, model, clone_inputs(base), first_call, base, check_copy_taint=taint_checked
                )
            except StageError as failure:
                if index == 0:
                    raise
                raise in_trial(failure, index, len(plan["trials"]), label) from None
        if first_call:
            _compiled(state, first_started)
            first_call = False
        if call.copy_taint is not None and not taint_ignored:
            taint_ignored = True
            result.warnings.append(
                f"trial {index + 1} ({DISTRIBUTION_TEXT['zeros']}): the output held bytes PyTorch had copied from an "
                "input, which exact zeros make honest math do (x + 0); not counted in this trial only"
            )
        # Same inputs again on the first trial: the output must not change.
        again = call_candidate(state, candidate, clone_inputs(base), False).output if index == 0 else None
        answer = _ship_trial(state, index, call, again)
        if answer == PROBE:
            probe = make_inputs(task_module, int(plan["probe_seed"]), "task", device)
            other = call_candidate(state, candidate, clone_inputs(probe), False, probe)
            answer = _ship_trial(state, "probe", other, None)
        if answer != CONTINUE:
            raise StageError(ErrorType.HARNESS_ERROR, "the judge did not answer a correctness trial")
        result.trials_passed = index + 1
        progress.send(TRIAL_DONE)
    progress.close()
    cases.built.clear()  # the shape cases' models and their device memory go before the timing stage
    params.set_for(None)  # the later stages see the model as constructed
    result.correct = True
    state.memory_phase("correctness")  # the judge lets go of the reference's outputs once all passed


def _compiled(state: ChildState, first_started: float) -> None:
    """The candidate's first call went through: its kernels are compiled, the correctness stage begins."""
    state.result.stage_durations["compile.first_call"] = round(time.perf_counter() - first_started, 4)
    # What compiling left behind is permanent from here: later collections scan only newer objects.
    gc.collect()
    gc.freeze()
    state.result.compiled = True
    state.stage(Stage.CORRECTNESS)


@dataclass
class _FirstTrial:
    """Trial 1's first call, made before the plan came (:func:`_first_trial_ahead`)."""

    seed: int
    base: list[Any]
    call: CandidateCall

    def is_trial(self, trial: dict[str, Any]) -> bool:
        """Whether the plan's trial is the one this call ran (the task's inputs of this seed)."""
        plain = trial.get("case", "main") == "main" and trial.get("params") is None
        return plain and trial.get("distribution") == "task" and trial.get("seed") == self.seed


def _first_trial_ahead(state: ChildState, task_module: Any, candidate: Any, device: torch.device) -> _FirstTrial:
    """Trial 1's first call (its kernels compile), before the plan (:attr:`.job.Job.defer_plan`):
    trial 1 is always the task's own inputs at the main shape, of a seed both children derive
    from the job's (:func:`.inputs.first_trial_seed`). Its failures are the first call's."""
    seed = first_trial_seed(state.job.seed)
    base = make_inputs(task_module, seed, "task", device)
    started = time.perf_counter()
    call = call_candidate(state, candidate, clone_inputs(base), True, base)
    _compiled(state, started)
    return _FirstTrial(seed, base, call)


class _Progress:
    """Tells the zygote's progress watchdog that this child moves on: the correctness stage began,
    a kernel finished compiling (device backends, through Triton's post-compile hook), a trial
    passed. A candidate can only silence it (and be cut sooner) or repeat it (and be cut at the
    evaluation's own time limit, as without the watchdog)."""

    def __init__(self, link: Any, backend: str) -> None:
        self.link = link
        self.hooked = False
        self.send(STARTED)
        if link is not None and backend in ("cuda", "npu"):
            try:
                from triton import knobs

                knobs.runtime.jit_post_compile_hook = self._compiled
                self.hooked = True
            except Exception:  # noqa: BLE001, S110 - an older Triton: compile time counts as trial time
                pass

    def _compiled(self, *args: Any, **kwargs: Any) -> None:
        self.send(STARTED)

    def send(self, byte: bytes) -> None:
        if self.link is not None:
            try:
                self.link.send(byte)
            except OSError:
                pass

    def close(self) -> None:
        if self.hooked:
            try:
                from triton import knobs

                knobs.runtime.jit_post_compile_hook = None
            except Exception:  # noqa: BLE001, S110
                pass


def in_trial(failure: StageError, index: int, total: int, label: str) -> StageError:
    """``failure`` with the trial it happened in (its inputs, parameters, shape case) appended."""
    where = f" [in trial {index + 1} of {total}" + (f": {label}]" if label else "]")
    return StageError(failure.error_type, failure.message + where, hack=failure.hack, **failure.metrics)


class ShapeCases:
    """The task module and a ``ModelNew`` per shape case of the plan (:mod:`.shape_trials`), built
    the first time a trial needs them."""

    def __init__(self, state: ChildState, device: torch.device) -> None:
        self.state = state
        self.device = device
        self.built: dict[str, tuple[Any, Any]] = {}
        self.known: dict[str, Any] | None = None

    def models(self, name: str) -> tuple[Any, Any]:
        """(``ModelNew`` instance, task module) of the case ``name``; raises :class:`StageError`."""
        if name in self.built:
            return self.built[name]
        state = self.state
        if self.known is None:
            self.known = {case.name: case for case in extra_cases(state.job, state.result.profile)}
            if state.job.precompile_wait_s > 0:  # the shape cases' kernels may be compiling ahead
                wait_for_mark(state.sandbox, ENDED, CASE_WAIT_S)
        case = self.known.get(name)
        if case is None:
            raise StageError(ErrorType.HARNESS_ERROR, f"the plan names a shape case this child does not know: {name!r}")
        try:
            built = build_case(state.job, state.result.profile, case, state.init_seed, self.device)
        except Exception as exc:  # noqa: BLE001 - the reference child built it from the same task
            raise StageError(
                ErrorType.HARNESS_ERROR, f"shape case {name!r} could not be built: {type(exc).__name__}: {exc}"
            ) from None
        where = f" for shape case {case_text(case)}"
        candidate = construct_candidate(state, built.init_inputs, built.reference, self.device, where)
        if state.snapshot is not None:
            check_snapshot(state.snapshot)
        self.built[name] = (candidate, built.task_module)
        return self.built[name]


class ParameterTrials:
    """Puts the varied parameters of a trial into the reference and the candidate, in place, and
    the constructed ones back (:mod:`.param_vary`); no method of the candidate runs."""

    def __init__(self, reference: Any, candidate: Any) -> None:
        self.candidate = candidate
        self.slots = floating_slots(reference)
        self.base = snapshot(self.slots)
        self.current: int | None = None
        self._reported: set[str] = set()

    def set_for(self, seed: Any) -> list[str]:
        """Set the values for a trial's parameter seed (None: as constructed); the reference's
        names the candidate has no matching tensor for, the first time they are found missing."""
        wanted = None if seed is None else int(seed)
        if wanted == self.current:
            return []
        values = self.base if wanted is None else draw_values(self.slots, wanted)
        write_reference(self.slots, values)
        missing = write_candidate(self.candidate, values)
        self.current = wanted
        new = [name for name in missing if name not in self._reported] if wanted is not None else []
        self._reported.update(new)
        return new


def _ship_trial(state: ChildState, index: int | str, call: CandidateCall, again: Any) -> bytes:
    """Send one trial's output (and the evaluation's result so far) to the judge; its answer byte."""
    if getattr(state.judge, "live", False):  # a judge in this process: the values as they are
        after = {i: (call.inputs_after or [])[i] for i in call.changed}
        return state.judge.send_trial_live(index, call.output, again, call.aliased, call.changed, after)
    tensors: list[torch.Tensor] = []
    try:
        header = {
            "index": index,
            "output": encode_tree(call.output, tensors),
            "again": encode_tree(again, tensors) if again is not None else None,
            "aliased": call.aliased,
            "changed": call.changed,
            "inputs_after": {str(i): encode_tree((call.inputs_after or [])[i], tensors) for i in call.changed},
            "result": _result_so_far(state),
        }
        export, device = _exporter(state)
        payload = encode_payload_parts(header, tensors, export, device)
    except WireError as problem:
        raise StageError(ErrorType.WRONG_OUTPUT_TYPE, f"the output cannot be compared: {problem}") from None
    return state.judge.send_trial(payload)


def _exporter(state: ChildState) -> tuple[Exporter | None, str]:
    """How device tensors reach the judge: by CUDA IPC handle (their work finished first), or as bytes."""
    if state.job.judge_transport != "ipc" or not torch.cuda.is_available():
        return None, ""
    from ascend_kernel_gym.evaluation.device_ipc import export_tensor

    torch.cuda.synchronize()
    return export_tensor, "cuda"


def _result_so_far(state: ChildState) -> dict[str, Any]:
    """The result as it stands (what the zygote reports if the judge fails this trial)."""
    partial = copy.copy(state.result)
    partial.stage_durations = dict(partial.stage_durations)
    partial.stage_durations[partial.stage.value] = round(
        partial.stage_durations.get(partial.stage.value, 0.0) + time.perf_counter() - state.t_stage, 4
    )
    if state.recorder is not None:
        partial.launches = list(state.recorder.launches)
        partial.torch_ops = sorted(state.recorder.ops)
    partial.warnings = [scrub_text(w, state.sandbox) for w in partial.warnings]
    return partial.to_dict()


def reference_slack(state: ChildState, reference: Any, inputs: list[Any], out_r: Any) -> list[Any] | None:
    """The float16 / bfloat16 reference's own rounding error (:class:`.reference_model.ReferenceSlack`).

    Runs right after the reference (the library snapshot was just checked, the collector is
    off); anything going wrong here only means no slack, never a failed candidate.
    """
    return state.slack(inputs, out_r) if state.slack is not None else None
