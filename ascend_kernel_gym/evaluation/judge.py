"""The trusted judge: the correctness verdict, decided in a process no candidate code ever ran in.

The judge lives in the zygote. It holds what the reference child (:mod:`.reference_run`) sent —
the plan (a seed and an input distribution per trial) and the reference's outputs, rounding
slack and changed inputs per trial, as plain bytes — and receives, trial by trial, what the
candidate's child produced on the same inputs: its output, its second output on trial 0's
inputs, the inputs it changed and which outputs share memory with an input. Every one arrives
as plain bytes (:mod:`.tensor_wire`) rebuilt into fresh CPU tensors here; nothing of the child's
making is unpickled or called. The checks, in order: structure, device, shape and dtype; aliasing;
values (tolerance, NaN / Inf) and input mutation; determinism (trial 0); input independence (the
same output for different inputs while the reference's changed; after a first-trial mismatch
the child is asked for its output on a probe set).

What a compromised child can still do (it runs the candidate's code): lie about its own output
(it can only claim values it computed somehow: the reference is not in its process), about
aliasing and changed inputs, and about what its recorder saw (``torch_fallback``), and fake its
timings within the bounds :func:`timing_check` enforces. It cannot read or change the reference's
results or this comparison.

Imports torch: only the zygote (and tests) import this module.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from ascend_kernel_gym.evaluation.compare import Strays, compare, outputs_close, outputs_identical, quick_close
from ascend_kernel_gym.evaluation.errors import (
    StageError,
    Verdict,
    classify_exception,
    harness_out_of_memory,
    record_failure,
    stage_error_from,
)
from ascend_kernel_gym.evaluation.outputs import OutputCheckError, flatten_outputs, output_leaves
from ascend_kernel_gym.evaluation.result import ErrorType, EvalResult, Stage
from ascend_kernel_gym.evaluation.tensor_wire import Importer, WireError, decode_tensors, decode_tree
from ascend_kernel_gym.evaluation.trimmed import TRIM, trimmed_mean

if TYPE_CHECKING:  # the reference child's module, which the zygote need not import
    from ascend_kernel_gym.evaluation.reference_run import Widen

#: the fastest memory any device has, bytes per second (an H200 moves 4.8e12, a B200 8e12): no
#: kernel writes its output faster than this
MAX_BYTES_PER_S = 2.0e13
#: how far a child's claimed timing may exceed the wall time the zygote saw (clock granularity)
TIMING_SLACK_S = 0.05
#: how far a claimed mean (rounded to 6 decimals, ms) of samples rounded to 5 decimals may sit from
#: the mean of the samples as sent
SAMPLE_ROUNDING_MS = 1.1e-5
#: a trial message may carry this many times the bytes of the reference's largest trial (its
#: inputs, outputs and changed inputs), plus :data:`TRIAL_EXTRA_BYTES`: more is refused unread
TRIAL_BYTES_FACTOR = 4
TRIAL_EXTRA_BYTES = 64 * 1024 * 1024


@dataclass
class _Trial:
    seed: int
    distribution: str
    output: Any
    slack: list[Any] | None
    inputs_after: dict[int, Any]
    #: the seed of the model's varied parameters (None: as constructed)
    params: int | None = None
    case: str = "main"
    #: how feedback names this trial
    label: str = ""
    #: per output leaf: the reference's own output shares memory with an input (``torch.relu_``)
    aliased: list[bool] = field(default_factory=list)
    #: the absolute tolerance's factor (large-magnitude trials: the output's growth)
    atol_scale: float = 1.0
    #: bytes of the trial's tensor inputs (the candidate may send them all back, changed)
    input_bytes: int = 0
    #: per output leaf: the stray elements it lets through (ill-conditioned references), or None
    strays: list[Strays | None] = field(default_factory=list)


@dataclass
class _Decoded:
    value: Any
    devices: dict[int, str] = field(default_factory=dict)


def _decode(node: Any, tensors: list[tuple[torch.Tensor, str]]) -> _Decoded:
    plain = [t for t, _ in tensors]
    return _Decoded(decode_tree(node, plain), {id(t): device for t, device in tensors})


class Judge:
    """The correctness verdict of one evaluation (see the module docstring)."""

    def __init__(self, atol: float, rtol: float, num_trials: int) -> None:
        self.atol = atol
        self.rtol = rtol
        self.num_trials = num_trials
        self.trials: list[_Trial] = []
        self.probe: _Trial | None = None
        self.profile = ""
        #: the reference's slowest call among the trials (the progress watchdog's measure of the work)
        self.slowest_ref_s = 0.0
        #: what the reference child changed in the plan (a distribution the reference cannot take)
        self.notes: list[str] = []
        #: set when the reference child failed: the evaluation ends with it
        self.reference_failure: StageError | None = None
        self.passed = 0
        self.max_abs = 0.0
        self.max_rel = 0.0
        self.out_bytes = 0
        #: elements let through as strays over the passed trials (:class:`.compare.Strays`)
        self.strays = 0
        self._previous: tuple[Any, Any] | None = None
        self._first: tuple[Any, Any] | None = None  # trial 0's (candidate output, reference output)
        self._pending: StageError | None = None  # trial 0's mismatch, while the probe is out
        self._ref_devices: dict[int, str] = {}
        #: per trial index: the moved runs of the reference not made yet (:data:`.reference_run.Widen`)
        self._deferred: dict[int, Widen] = {}
        #: how many trials' moved runs were made for an output that needed them
        self.widened = 0

    @property
    def ready(self) -> bool:
        return bool(self.trials) or self.reference_failure is not None

    @property
    def done(self) -> bool:
        """Every trial judged and passed."""
        return bool(self.trials) and self.passed >= len(self.trials)

    # --- the reference child's payload ----------------------------------------------------
    def load_reference(self, header: dict[str, Any], body: bytes) -> None:
        """Take the reference child's payload (a failure of its own ends the evaluation)."""
        error = header.get("error")
        if isinstance(error, dict):
            self.reference_failure = stage_error_from(error, 2000)
            return
        try:
            self._load_plan(header, decode_tensors(header, body))
        except (WireError, KeyError, TypeError, ValueError) as exc:
            self.trials = []
            self.reference_failure = StageError(
                ErrorType.HARNESS_ERROR, f"the reference child's results are unreadable: {exc}"
            )

    def load_live_reference(
        self, header: dict[str, Any], tensors: list[torch.Tensor], deferred: dict[int, Widen] | None = None
    ) -> None:
        """Take a plan built in this process (:func:`.reference_run.build_plan`), its tensors as they
        are, and the moved runs it left for later (``deferred``: by trial index)."""
        self._load_plan(header, [(t, t.device.type) for t in tensors])
        self._deferred = dict(deferred or {})

    def _load_plan(self, header: dict[str, Any], decoded: list[tuple[torch.Tensor, str]]) -> None:
        self._ref_devices = {id(t): device for t, device in decoded}
        tensors = [t for t, _ in decoded]
        trials = header["trials"]
        if not isinstance(trials, list) or len(trials) != self.num_trials:
            raise WireError("the plan has the wrong number of trials")
        self.trials = [self._reference_trial(entry, tensors) for entry in trials]
        self.probe = self._reference_trial(header["probe"], tensors)
        self.profile = str(header.get("profile", ""))
        self.slowest_ref_s = max([float(e.get("ref_s") or 0.0) for e in trials] + [0.0])
        self.notes = [str(note)[:500] for note in list(header.get("notes") or [])[:16]]

    @staticmethod
    def _reference_trial(entry: dict[str, Any], tensors: list[torch.Tensor]) -> _Trial:
        slack = decode_tree(entry["slack"], tensors) if entry.get("slack") is not None else None
        after = {int(k): decode_tree(v, tensors) for k, v in dict(entry.get("inputs_after") or {}).items()}
        params = entry.get("params")
        return _Trial(
            int(entry["seed"]),
            str(entry["distribution"]),
            decode_tree(entry["output"], tensors),
            slack,
            after,
            params=None if params is None else int(params),
            case=str(entry.get("case", "main")),
            label=str(entry.get("label", "")),
            aliased=[bool(a) for a in entry.get("aliased") or []],
            atol_scale=max(1.0, float(entry.get("atol_scale", 1.0))),
            input_bytes=max(0, int(entry.get("input_bytes") or 0)),
            strays=[_strays(item) for item in list(entry.get("strays") or [])],
        )

    def release(self) -> None:
        """Drop the reference's tensors (outputs, slack, inputs as the reference left them) once
        every trial passed; the counts stay. A trial sent after that is out of order and refused
        before any of them would be read (:meth:`_route`)."""
        for trial in [*self.trials, *([self.probe] if self.probe is not None else [])]:
            trial.output, trial.slack, trial.inputs_after = None, None, {}
        self._previous = self._first = None

    def trial_bytes_limit(self) -> int:
        """The most tensor bytes one trial message of the candidate's child may carry."""
        largest = 0
        for trial in [*self.trials, *([self.probe] if self.probe is not None else [])]:
            total = trial.input_bytes
            for value in (trial.output, *trial.inputs_after.values()):
                for _, leaf in output_leaves(value):
                    if isinstance(leaf, torch.Tensor):
                        total += leaf.numel() * leaf.element_size()
            largest = max(largest, total)
        return TRIAL_BYTES_FACTOR * largest + TRIAL_EXTRA_BYTES

    def plan(self) -> dict[str, Any]:
        """What the candidate's child is told: seeds and distributions, never a reference value."""
        probe = self.probe.seed if self.probe is not None else 0
        trials = [
            {"seed": t.seed, "distribution": t.distribution, "params": t.params, "case": t.case, "label": t.label}
            for t in self.trials
        ]
        return {"trials": trials, "probe_seed": probe, "profile": self.profile, "notes": self.notes}

    def where(self, index: int) -> str:
        """``trial 3 of 5: large-magnitude inputs ...``: how feedback names a trial."""
        label = self.trials[index].label if 0 <= index < len(self.trials) else ""
        return f"trial {index + 1} of {self.num_trials}" + (f": {label}" if label else "")

    # --- the candidate's trials -------------------------------------------------------------
    def judge(
        self,
        header: dict[str, Any],
        body: bytes,
        importer: Importer | None = None,
        place: torch.device | None = None,
    ) -> Verdict:
        """Judge one trial message of the candidate's child.

        ``importer`` takes the tensors the child handed over by reference (:mod:`.device_ipc`, the
        judge in a reference child on a GPU); ``place``: the device the reference's results are
        on, where the tensors the child sent as bytes from that device type are moved.

        Runs PyTorch single-threaded: the zygote forks children, and a process that has entered
        an OpenMP parallel region hands its children a thread team they do not have (their first
        parallel operation then waits forever).
        """
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return self._judge(header, body, importer, place)
        finally:
            torch.set_num_threads(threads)

    def judge_live(
        self, index: int | str, output: Any, again: Any, aliased: list[bool], changed: list[int], after: dict[int, Any]
    ) -> Verdict:
        """Judge one trial from values of this process (a judge that shares the candidate's process)."""
        devices: dict[int, str] = {}
        for value in (output, again, *after.values()):
            for _, leaf in output_leaves(value) if value is not None else ():
                if isinstance(leaf, torch.Tensor):
                    devices[id(leaf)] = leaf.device.type
        try:
            return self._route(index, _Decoded(output, devices), _Decoded(again, devices), aliased, changed, after)
        except StageError as failure:
            return Verdict("fail", failure)

    def _judge(
        self, header: dict[str, Any], body: bytes, importer: Importer | None, place: torch.device | None
    ) -> Verdict:
        try:
            tensors = decode_tensors(header, body, importer)
            if place is not None:
                tensors = [
                    (t.to(place) if label == place.type and t.device != place else t, label) for t, label in tensors
                ]
            index = header["index"]
            output = _decode(header["output"], tensors)
            again = _decode(header["again"], tensors) if header.get("again") is not None else None
            aliased = [bool(a) for a in header.get("aliased", [])]
            changed = [int(i) for i in header.get("changed", [])]
            after = {int(k): decode_tree(v, [t for t, _ in tensors]) for k, v in dict(header["inputs_after"]).items()}
        except Exception as exc:  # noqa: BLE001 - the harness writes well-formed trials: any failure is forged ...
            text = f"{type(exc).__name__}: {str(exc)[:200]}"
            # ... but copying them needs device memory: a full device (eight workers on an H100 left
            # a judge none, 2026-12-05) is the harness's, never a verdict on the candidate, whose
            # outputs' size the judge bounds (:meth:`Judge.trial_bytes_limit`)
            if classify_exception(exc) == ErrorType.OOM:
                return Verdict("fail", harness_out_of_memory("the judge, reading a trial", text))
            return Verdict(
                "fail", StageError(ErrorType.SANDBOX_VIOLATION, f"the child's trial message is malformed: {text}")
            )
        try:
            return self._route(index, output, again, aliased, changed, after)
        except StageError as failure:
            return Verdict("fail", failure)
        except Exception as exc:  # noqa: BLE001 - the zygote must outlive whatever a trial holds
            text = f"{type(exc).__name__}: {str(exc)[:200]}"
            if classify_exception(exc) == ErrorType.OOM:
                return Verdict("fail", harness_out_of_memory("the judge, comparing a trial", text))
            return Verdict("fail", StageError(ErrorType.HARNESS_ERROR, f"the judge could not compare a trial: {text}"))

    def _route(
        self,
        index: Any,
        output: _Decoded,
        again: _Decoded | None,
        aliased: list[bool],
        changed: list[int],
        after: dict[int, Any],
    ) -> Verdict:
        if index == "probe":
            return self._judge_probe(output)
        if type(index) is not int or index != self.passed or index >= len(self.trials):
            raise StageError(ErrorType.SANDBOX_VIOLATION, "the child sent its trials out of order")
        if again is not None and again.value is None:
            again = None
        return self._judge_trial(index, output, again, aliased, changed, after)

    def _judge_probe(self, output: _Decoded) -> Verdict:
        pending, self._pending = self._pending, None
        if pending is None or self._first is None or self.probe is None:
            raise StageError(ErrorType.SANDBOX_VIOLATION, "the child sent a probe output nobody asked for")
        first_c, first_r = self._first
        if outputs_identical(output.value, first_c) and not outputs_close(
            self.probe.output, first_r, self.atol, self.rtol
        ):
            raise input_independent()
        raise pending

    def _judge_trial(
        self,
        index: int,
        output: _Decoded,
        again: _Decoded | None,
        aliased: list[bool],
        changed: list[int],
        after: dict[int, Any],
    ) -> Verdict:
        ref = self.trials[index]
        try:
            pairs = self._checked_pairs(output, ref.output, aliased, ref.aliased)
        except StageError as failure:
            if index == 0 or failure.error_type == ErrorType.SANDBOX_VIOLATION:
                raise
            raise with_note(failure, f" ({self.where(index)})") from None
        atol = self.atol * ref.atol_scale
        # Changed by the candidate, and not the way the reference changes it (a reference may work in
        # place, ``nn.ReLU(inplace=True)``: the candidate may then do the same or leave the input alone).
        mutated = [
            i
            for i in changed
            if i not in ref.inputs_after or i not in after or not outputs_identical(after[i], ref.inputs_after[i])
        ]
        widen = self._deferred.pop(index, None)
        if widen is not None and not self._all_close(pairs, ref, atol):
            # The slack of the reference's sensitivity only widens the bound: it is made for an
            # output the bound without it refuses, as the plan would have made it.
            self.widened += 1
            widened = widen(ref.output)
            if widened is not None:
                ref.slack, ref.strays = widened[0], [_strays(item) for item in widened[1]]
        slack, strays = _bounds(ref, len(pairs))
        if mutated and self._all_close(pairs, ref, atol):
            raise StageError(
                ErrorType.INPUT_MUTATED,
                f"ModelNew.forward modified its input argument(s) {mutated} in place (its output is otherwise "
                f"correct; {self.where(index)}); inputs must be left unchanged",
            )
        # An input changed and the output is wrong too: most likely an honest mistake (an argument
        # order that makes the kernel write into an input), so the output's own failure is reported.
        note = mutation_note(mutated)
        try:
            if index == 0:
                if again is None or not outputs_close(again.value, output.value, self.atol, self.rtol):
                    raise StageError(
                        ErrorType.NONDETERMINISTIC,
                        "ModelNew.forward gave different outputs for the same inputs on two calls "
                        "(race condition, uninitialised memory, or state kept between calls)",
                    )
            previous = self._previous
            if (
                previous is not None
                and outputs_identical(output.value, previous[0])
                and not outputs_close(ref.output, previous[1], self.atol, self.rtol)
            ):
                raise input_independent()
            max_abs, max_rel, strays_passed = self.max_abs, self.max_rel, self.strays
            for (cand_t, ref_t, label), ref_slack, ref_strays in zip(pairs, slack, strays, strict=False):
                if quick_close(cand_t, ref_t, atol, self.rtol, ref_slack):
                    # Every element is close and finite: the error statistics in float32 (a few passes;
                    # the float64 check below costs several times more on outputs of hundreds of MB).
                    abs_err, rel_err = _error_stats(cand_t, ref_t, atol)
                    max_abs, max_rel = max(max_abs, abs_err), max(max_rel, rel_err)
                    continue
                cmp = compare(cand_t, ref_t, atol, self.rtol, ref_slack, ref_strays)
                if cmp.ok:
                    max_abs = max(max_abs, cmp.max_abs_err)
                    max_rel = max(max_rel, cmp.max_rel_err)
                    strays_passed += cmp.strays
                    continue
                if cmp.nonfinite:
                    raise StageError(
                        ErrorType.NAN_OR_INF,
                        f"{label} contains NaN or Inf where the reference is finite (first at index "
                        f"{tuple(cmp.first_bad_index)}: got {cmp.cand_value}, expected {cmp.ref_value}); "
                        f"{cmp.bad_count} of {cand_t.numel()} elements are wrong ({self.where(index)})",
                        max_abs_err=cmp.max_abs_err,
                        max_rel_err=cmp.max_rel_err,
                        trials_passed=index,
                    )
                bound = tolerance_text(ref_t, atol, self.rtol, ref_slack) + _strays_text(ref_strays)
                mismatch = StageError(
                    ErrorType.VALUE_MISMATCH,
                    f"{label} does not match the reference ({self.where(index)}): "
                    f"max abs error {cmp.max_abs_err:.3g}, max rel error {cmp.max_rel_err:.3g}, "
                    f"{cmp.bad_count} of {cand_t.numel()} elements {bound}; "
                    f"first bad index {tuple(cmp.first_bad_index)}: got {cmp.cand_value:.6g}, "
                    f"expected {cmp.ref_value:.6g}" + note,
                    max_abs_err=cmp.max_abs_err,
                    max_rel_err=cmp.max_rel_err,
                    trials_passed=index,
                )
                if previous is None:  # a first-trial mismatch: does the candidate ignore its inputs?
                    self._first = (output.value, ref.output)
                    self._pending = mismatch
                    return Verdict("probe")
                raise mismatch
        except StageError as failure:
            raise with_note(failure, note) from None
        self.max_abs, self.max_rel, self.strays = max_abs, max_rel, strays_passed
        self._previous = (output.value, ref.output)
        self.out_bytes = max(self.out_bytes, sum(c.numel() * c.element_size() for c, _, _ in pairs))
        self.passed = index + 1
        return Verdict("continue")

    def _all_close(self, pairs: list[tuple[torch.Tensor, torch.Tensor, str]], ref: _Trial, atol: float) -> bool:
        """Whether every tensor of the output is within the trial's bound as it stands."""
        slack, strays = _bounds(ref, len(pairs))
        return all(
            quick_close(c, r, atol, self.rtol, s) or compare(c, r, atol, self.rtol, s, k).ok
            for (c, r, _), s, k in zip(pairs, slack, strays, strict=False)
        )

    def _checked_pairs(
        self, output: _Decoded, ref_out: Any, aliased: list[bool], ref_aliased: list[bool]
    ) -> list[tuple[torch.Tensor, torch.Tensor, str]]:
        """Pair the candidate's output with the reference's; check everything but values."""
        try:
            pairs = flatten_outputs(output.value, ref_out)
        except OutputCheckError as problem:
            raise StageError(ErrorType(problem.kind), problem.message) from None
        leaves = output_leaves(output.value)
        if len(aliased) != len(leaves):
            raise StageError(ErrorType.SANDBOX_VIOLATION, "the child's aliasing report does not match its output")
        ref_shared = ref_aliased + [False] * (len(aliased) - len(ref_aliased))
        for (_, _, label), shared, ref_too in zip(pairs, aliased, ref_shared, strict=False):
            if shared and not ref_too:  # an in-place reference (``torch.relu_``) may be matched in place
                raise StageError(
                    ErrorType.OUTPUT_ALIASES_INPUT,
                    f"{label} shares memory with an input or a parameter of the model; return a new tensor "
                    "written by your kernel",
                )
        for cand_t, ref_t, label in pairs:
            cand_device = output.devices.get(id(cand_t), "cpu")
            ref_device = self._ref_devices.get(id(ref_t), "cpu")
            if cand_device != ref_device:
                raise StageError(
                    ErrorType.DEVICE_MISMATCH, f"{label} is on {cand_device}, the reference output is on {ref_device}"
                )
            if tuple(cand_t.shape) != tuple(ref_t.shape):
                raise StageError(
                    ErrorType.SHAPE_MISMATCH, f"{label} has shape {tuple(cand_t.shape)}, expected {tuple(ref_t.shape)}"
                )
            if cand_t.dtype != ref_t.dtype:
                raise StageError(
                    ErrorType.DTYPE_MISMATCH,
                    f"{label} has dtype {str(cand_t.dtype).replace('torch.', '')}, expected "
                    f"{str(ref_t.dtype).replace('torch.', '')}",
                )
        return pairs


def _bounds(ref: _Trial, count: int) -> tuple[list[Any], list[Strays | None]]:
    """A trial's slack and strays, one entry per compared tensor (``count``)."""
    slack = list(ref.slack) if ref.slack is not None else [None] * count
    return slack, ref.strays + [None] * (count - len(ref.strays))


def _error_stats(cand: torch.Tensor, ref: torch.Tensor, atol: float) -> tuple[float, float]:
    """Largest absolute and relative error of a pair that :func:`.compare.quick_close` accepted
    (both finite everywhere), computed in float32."""
    if cand.numel() == 0:
        return 0.0, 0.0
    diff = torch.sub(cand.to(torch.float32), ref.to(torch.float32)).abs_()  # a new tensor: inputs stay as they are
    max_abs = float(diff.max())
    rel = diff.div_(ref.to(torch.float32).abs().add_(max(atol, 1e-12)))
    return max_abs, float(rel.max())


def input_independent() -> StageError:
    return StageError(
        ErrorType.INPUT_INDEPENDENT,
        "ModelNew.forward returned the same output for different inputs while the reference's output changed "
        "(a constant, or a result cached across calls); compute the output from the inputs every call",
    )


def _strays(item: Any) -> Strays | None:
    """A plan's ``[allowed, reach]`` entry (None, or anything malformed: no strays)."""
    try:
        allowed, reach = int(item[0]), float(item[1])
    except (TypeError, ValueError, IndexError):
        return None
    return Strays(allowed, reach) if allowed > 0 and math.isfinite(reach) and reach > 0.0 else None


def _strays_text(strays: Strays | None) -> str:
    if strays is None:
        return ""
    return (
        f" (the reference is ill-conditioned on these inputs: up to {strays.allowed} elements may lie up to "
        f"{strays.reach:.3g} further)"
    )


def tolerance_text(ref: torch.Tensor, atol: float, rtol: float, slack: Any) -> str:
    if not (torch.Tensor.is_floating_point(ref) or torch.Tensor.is_complex(ref)):
        return "differ (integer and boolean outputs must match exactly)"
    rounding = " + the reference rounding error" if slack is not None else ""
    return f"outside atol={atol:g} + rtol={rtol:g}*|expected|{rounding}"


def mutation_note(changed: list[int]) -> str:
    if not changed:
        return ""
    return (
        f"\nNote: ModelNew.forward also modified its input argument(s) {changed} in place. Check the argument "
        "order of your kernel launch: the kernel may be storing into an input instead of the output."
    )


def with_note(failure: StageError, note: str) -> StageError:
    if not note or failure.message.endswith(note):
        return failure
    return StageError(failure.error_type, failure.message + note, hack=failure.hack, **failure.metrics)


def timing_check(result: EvalResult, window_s: float | None, out_bytes: int, asked: bool = True) -> dict[str, Any]:
    """Cross-check the child's claimed timings against what the zygote saw; returns the record.

    The claims must come with their samples, and the means and the speedup must be what the samples
    give (:func:`.trimmed.trimmed_mean`; the samples are rounded to 1e-5 ms), and timings of a job
    that asked for none are claims of nothing. Physically, (1) every timed call ran inside the window
    between the judge's last verdict and the result's arrival, so the sum of all claimed samples
    cannot exceed that window, and (2) no kernel writes its output faster than
    :data:`MAX_BYTES_PER_S`. A claim that breaks any of these is forged: the speedup is dropped and
    the result marked a hack.
    """
    record: dict[str, Any] = {"window_s": None if window_s is None else round(window_s, 4), "ok": True}
    claims = (result.speedup, result.kernel_ms, result.ref_ms)
    if all(claim is None for claim in claims):
        return record
    problems = _summary_problems(result, asked)
    samples = result.timing.get("kernel_ms_samples"), result.timing.get("ref_ms_samples")
    if not problems:
        claimed_s = sum(float(v) for s in samples for v in s) / 1e3  # type: ignore[union-attr]
        kernel_s = float(result.kernel_ms) / 1e3  # type: ignore[arg-type]
        record["claimed_s"] = round(claimed_s, 6)
        floor_s = out_bytes / MAX_BYTES_PER_S
        record["floor_ms"] = round(floor_s * 1e3, 6)
        if window_s is not None and not claimed_s <= window_s + TIMING_SLACK_S:
            problems.append(f"the timed calls claim {claimed_s:.3f} s in a window of {window_s:.3f} s")
        if not kernel_s >= floor_s or not math.isfinite(kernel_s):
            problems.append(f"the kernel time {result.kernel_ms} ms is below the physical floor {floor_s * 1e3:.6f} ms")
    if problems:
        record["ok"] = False
        record["problems"] = problems
        result.speedup = None
        result.kernel_ms = None
        result.ref_ms = None
        result.hack = True
        result.hack_reasons.append("timing_forged: " + "; ".join(problems))
        result.warnings.append(
            "timing discarded: the child's claimed times are physically impossible: " + "; ".join(problems)
        )
    return record


def _summary_problems(result: EvalResult, asked: bool) -> list[str]:
    """Why the claimed means and speedup are not what the claimed samples give (empty: they are)."""
    if not asked:
        return ["timings were claimed for an evaluation that measured none"]
    samples = result.timing.get("kernel_ms_samples"), result.timing.get("ref_ms_samples")
    if not all(type(s) is list and s and all(type(v) in (int, float) for v in s) for s in samples):
        return ["timings were claimed without the timed calls' samples"]
    kernel, ref = (trimmed_mean([float(v) for v in s], TRIM) for s in samples)  # type: ignore[union-attr]
    claimed = result.kernel_ms, result.ref_ms, result.speedup
    if not all(type(v) in (int, float) and math.isfinite(v) for v in claimed):
        return ["the claimed times are not finite numbers"]
    problems = []
    for name, value, expected in (("kernel_ms", claimed[0], kernel), ("ref_ms", claimed[1], ref)):
        if not abs(float(value) - expected) <= SAMPLE_ROUNDING_MS + 1e-6 * abs(expected):  # type: ignore[arg-type]
            problems.append(f"{name} {value} is not the trimmed mean of its samples ({expected:.6f})")
    kernel_ms, ref_ms, speedup = (float(v) for v in claimed)  # type: ignore[arg-type]
    if not problems and kernel_ms > 0 and ref_ms > 0:
        # the child rounds the means to 1e-6 ms and the speedup to 1e-4
        ratio = ref_ms / kernel_ms
        allowed = 1e-4 + ratio * (1e-3 + 1e-6 / kernel_ms + 1e-6 / ref_ms)
        if not abs(speedup - ratio) <= allowed:
            problems.append(f"the speedup {speedup} is not ref_ms / kernel_ms ({ratio:.6f})")
    return problems


def merge_final(result: EvalResult, judge: Judge) -> EvalResult:
    """The child's final result, with the correctness fields the judge owns overwritten."""
    if result.error_type != ErrorType.NONE or not result.correct:
        # The child failed on its own (a later stage, or a check of its own): that stands, but it
        # cannot claim trials it was never judged on.
        result.trials_passed = min(result.trials_passed, judge.passed)
        return result
    if not judge.done:
        record_failure(
            result,
            StageError(
                ErrorType.SANDBOX_VIOLATION,
                "the evaluation reported a correct result for trials the judge never saw (a forged result)",
            ),
        )
        result.trials_passed = judge.passed
        return result
    result.trials_passed = judge.passed
    result.trials_total = len(judge.trials)
    result.max_abs_err = judge.max_abs
    result.max_rel_err = judge.max_rel
    if judge.strays:
        result.warnings.append(
            f"{judge.strays} output element(s) lay beyond the tolerance where the reference itself is "
            "ill-conditioned (one rounding step of its inputs moves it further); they were accepted"
        )
    if result.stage == Stage.DONE:
        result.correct = True
    return result
