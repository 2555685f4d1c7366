"""The reference child: the task's reference outputs for an evaluation, computed where no candidate ran.

For every evaluation the zygote forks two children from the same clean state: the candidate's
(:mod:`.child`) and this one. This one never sees the candidate's code. It builds the reference
model from the evaluation's seed (exactly as the candidate's child does, :mod:`.reference_model`),
draws the correctness plan — per trial a seed and an input distribution, falling back to the
task's own distribution where a varied one makes the reference fail or return non-finite values —
and runs the reference on every trial's inputs, on a probe set (for the input-independence check)
and, for float16 / bfloat16 outputs, once more in float32 (the reference's own rounding error).
It ships the plan and those results as plain bytes (:mod:`.tensor_wire`) to the judge
(:mod:`.judge`, in the zygote) and exits. The candidate's child receives only the plan (seeds and
distributions), never a reference output. Where workers share a device the child starts only
once the candidate's child made trial 1's first call (:attr:`.job.Job.defer_plan`): a candidate
that fails to compile costs the device no reference run.

Imports torch: only the zygote and its children import this module.
"""

from __future__ import annotations

import os
import random
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

import torch

from ascend_kernel_gym.evaluation.compare import (
    GAP_CHUNK,
    all_finite,
    compact_slack,
    inputs_equal,
    rounding_moves,
)
from ascend_kernel_gym.evaluation.errors import (
    REFERENCE_BROKE_DEVICE,
    StageError,
    classify_exception,
    reference_failure,
)
from ascend_kernel_gym.evaluation.inputs import (
    TrialSpec,
    clone_inputs,
    describe_trial,
    first_trial_seed,
    make_inputs,
    trial_schedule,
)
from ascend_kernel_gym.evaluation.job import Job
from ascend_kernel_gym.evaluation.outputs import OutputCheckError, flatten_outputs, output_leaves
from ascend_kernel_gym.evaluation.param_vary import draw_values, floating_slots, snapshot, write_reference
from ascend_kernel_gym.evaluation.process import Prepared, limit_memory
from ascend_kernel_gym.evaluation.reference_model import (
    LoadedReference,
    ReferenceSlack,
    init_seed_of,
    load_reference,
    run_once,
)
from ascend_kernel_gym.evaluation.result import ErrorType
from ascend_kernel_gym.evaluation.shape_trials import build_case, case_text, extra_cases
from ascend_kernel_gym.evaluation.tensor_wire import encode_payload_parts, encode_tree
from ascend_kernel_gym.evaluation.wire import RESULT, await_plan_start, write_all

#: a varied trial's moved runs made later, by the judge (:attr:`.job.Job.lazy_sensitivity`): called
#: with the trial's reference output, they give its slack and strays as the plan would have had
#: them (``(slack, strays)``, compact, one entry per output tensor), or None where a moved run of
#: the reference fails or is not finite
Widen = Callable[[Any], tuple[list[Any], list[list[float] | None]] | None]

#: moved runs per varied trial, and the factor on the largest move (the slack it adds)
SENSITIVITY_RUNS = 4
SENSITIVITY_FACTOR = 2.0
#: a varied trial lets through one stray element (:class:`.compare.Strays`) per this many elements
#: that the last moved run moved beyond the others' envelope and beyond the tolerance. Measured on
#: a CPU model of the fp16 attention block with large inputs (2026-12-06): 28-33 thousand such
#: elements of 8.4 million; an fp32-softmax kernel then missed the envelope at 0-2 (on an H100,
#: batch 8: 58 and 106 of 67 million, failing two of eleven honest runs)
STRAY_DIVISOR = 100


def plan_or_failure(
    job: Job, prepared: Prepared, tensors: list[torch.Tensor], deferred: dict[int, Widen] | None = None
) -> dict[str, Any]:
    """In a reference child: :func:`build_plan`'s header (its tensors appended to ``tensors``, its
    ``deferred`` moved runs to that dict), or ``{"error": {"type", "message"}}`` saying why there
    is none (``tensors`` and ``deferred`` then emptied)."""
    try:
        if prepared.error is not None:
            raise prepared.error
        assert prepared.device is not None
        limit_memory(job)
        return build_plan(job, prepared.device, tensors, deferred)
    except StageError as stage_failure:
        failure = stage_failure
    except BaseException as exc:  # noqa: BLE001 - a harness bug must still produce an answer
        if classify_exception(exc) == ErrorType.OOM:
            failure = reference_failure(exc, "reference child")
        else:
            text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            failure = StageError(ErrorType.HARNESS_ERROR, f"reference child: {text}")
    tensors.clear()
    if deferred is not None:
        deferred.clear()
    return {"error": {"type": failure.error_type.value, "message": failure.message}}


def reference_main(job: Job, job_fd: int, result_fd: int, token: str, prepared: Prepared) -> NoReturn:
    """Compute the plan and the reference results of ``job``, write them to ``result_fd``, exit
    (a deferred plan, :attr:`.job.Job.defer_plan`: once the zygote says so on ``job_fd``)."""
    if job.defer_plan and await_plan_start(job_fd) is not True:
        os._exit(0)  # the evaluation ended before it needed the reference
    tensors: list[torch.Tensor] = []
    header = plan_or_failure(job, prepared, tensors)
    header["token"] = token
    try:
        parts = [RESULT, *encode_payload_parts(header, tensors)]
    except Exception as exc:  # noqa: BLE001 - e.g. a reference output of an unsupported dtype
        message = f"the reference's outputs cannot be compared: {type(exc).__name__}: {str(exc)[:300]}"
        failure = {"type": ErrorType.HARNESS_ERROR.value, "message": message}
        parts = [RESULT, *encode_payload_parts({"error": failure, "token": token}, [])]
    try:
        write_all(result_fd, *parts)
    finally:
        os._exit(0)


def _device_usable(device: torch.device) -> bool:
    """Whether the device still runs work (a device-side assert leaves a context that cannot)."""
    if device.type not in ("cuda", "npu"):
        return True
    try:
        probe = torch.ones(2, device=device)
        getattr(torch, device.type).synchronize()
        return float(probe.sum().item()) == 2.0
    except Exception:  # noqa: BLE001 - any failure means the context is gone
        return False


def build_plan(
    job: Job, device: torch.device, tensors: list[torch.Tensor], deferred: dict[int, Widen] | None = None
) -> dict[str, Any]:
    """The plan header (its tensors appended to ``tensors``); raises :class:`StageError`.

    The random source is drawn in the order the candidate's child draws it (the models' seed
    first), so both build the same reference model and parameters. A trial whose distribution
    or varied parameters make the reference fail or return non-finite values runs again without
    them (the parameters first, then the distribution), and the plan's ``notes`` say so.

    With ``deferred`` (a dict; :attr:`.job.Job.lazy_sensitivity`), a varied trial's moved runs
    (:func:`_sensitivity`) are not made here: ``deferred[index]`` makes them when the judge asks,
    and the trial's plan entry has the slack without them. A trial then falls back only where
    its first run fails or is not finite.
    """
    rng = random.Random(job.seed if job.seed is not None else int.from_bytes(os.urandom(8), "little"))
    init_seed = init_seed_of(rng)
    loaded = load_reference(job, init_seed, device)
    slack_of = ReferenceSlack(loaded.reference, device)
    slots = floating_slots(loaded.reference)
    base_values = snapshot(slots)
    cases = {case.name: case for case in extra_cases(job, loaded.profile)}
    schedule = trial_schedule(job.num_trials, rng, list(cases))
    trials: list[dict[str, Any]] = []
    notes: list[str] = []
    dropped: set[str] = set()
    magnitude0 = 0.0
    for index, spec in enumerate(schedule):
        entry = None
        if spec.case != "main":
            # The planned case, else another the reference takes, else one more trial at the main shape.
            for name in [spec.case, *(n for n in cases if n != spec.case)]:
                if name in dropped:
                    continue
                wanted = describe_trial(spec.distribution, False, case_text(cases[name]))
                entry = _case_trial(job, loaded, cases[name], init_seed, device, rng, tensors, notes)
                if entry is not None:
                    break
                dropped.add(name)
            if entry is None:
                spec = TrialSpec("normal")
        if entry is None:
            wanted = describe_trial(spec.distribution, spec.vary_params and bool(slots), "main")
            entry = _main_trial(
                job, loaded, spec, slots, base_values, device, rng, slack_of, tensors,
                first=index == 0, lazy=deferred is not None,
            )  # fmt: skip
            widen = entry.pop("widen", None)
            if widen is not None and deferred is not None:
                deferred[index] = widen
        entry["label"] = describe_trial(
            entry["distribution"],
            entry["params"] is not None,
            case_text(cases[entry["case"]]) if entry["case"] != "main" else "main",
        )
        if entry["label"] != wanted:
            notes.append(
                f"trial {index + 1}: {wanted} made the task's reference fail or return non-finite values; "
                f"it ran with {entry['label']} instead"
            )
        magnitude = entry.pop("magnitude")
        if index == 0:
            magnitude0 = magnitude
        # Outputs that grow with large inputs (a matmul's, quadratically) carry rounding errors
        # that grow with them: the absolute tolerance follows the output's scale in such a trial.
        grows = entry["distribution"] == "large" and magnitude0 > 0
        entry["atol_scale"] = max(1.0, magnitude / magnitude0) if grows else 1.0
        trials.append(entry)
    probe_seed = rng.getrandbits(62)
    probe = _reference_trial(loaded, device, probe_seed, "task", slack_of, tensors, slack=False)
    if probe is not None:
        probe.pop("magnitude", None)
    return {"profile": loaded.profile, "trials": trials, "probe": probe, "notes": notes}


def _main_trial(
    job: Job,
    loaded: LoadedReference,
    spec: TrialSpec,
    slots: list[Any],
    base_values: dict[str, torch.Tensor],
    device: torch.device,
    rng: random.Random,
    slack_of: ReferenceSlack,
    tensors: list[torch.Tensor],
    first: bool = False,
    lazy: bool = False,
) -> dict[str, Any]:
    """A trial at the main shape: as planned, or with the first fallback the reference takes
    (``first``: trial 1, the task's own inputs, whose seed a deferred plan takes from the job's).

    In a varied distribution the slack also covers the reference's own sensitivity to one
    rounding step of its inputs (:func:`_sensitivity`); ``lazy``: those runs are left to the
    judge (the entry's ``widen``, :data:`Widen`)."""
    for distribution, vary in _fallbacks(spec.distribution, spec.vary_params and bool(slots), job):
        seed = rng.getrandbits(62)
        if first and job.defer_plan:  # the candidate's child ran trial 1 before this plan
            seed = first_trial_seed(job.seed)
        params = rng.getrandbits(62) if vary else None
        if params is not None:
            write_reference(slots, draw_values(slots, params))
        sensitive = distribution != "task"
        tolerance = (job.task.atol, job.task.rtol)
        try:
            entry = _reference_trial(
                loaded,
                device,
                seed,
                distribution,
                slack_of,
                tensors,
                optional=vary,
                sensitive=sensitive and not lazy,
                tolerance=tolerance,
            )
        finally:
            if params is not None:
                write_reference(slots, base_values)
        if entry is not None:
            entry.update(params=params, case="main")
            if sensitive and lazy:
                entry["widen"] = _deferred_moves(
                    loaded, device, seed, distribution, slack_of, tolerance,
                    slots=slots, values_seed=params, base_values=base_values,
                )  # fmt: skip
            return entry
    # unreachable: the task's own inputs either pass or raise
    raise StageError(ErrorType.HARNESS_ERROR, "the task's reference fails on the task's own inputs")


def _case_trial(
    job: Job,
    loaded: LoadedReference,
    case: Any,
    init_seed: int,
    device: torch.device,
    rng: random.Random,
    tensors: list[torch.Tensor],
    notes: list[str],
) -> dict[str, Any] | None:
    """A trial at a shape case; None (and a note) when the case's reference cannot take it."""
    seed = rng.getrandbits(62)
    problem = ""
    try:
        models = build_case(job, loaded.profile, case, init_seed, device)
        entry = _reference_trial(
            models, device, seed, "task", ReferenceSlack(models.reference, device), tensors, optional=True
        )
        if entry is None:
            problem = "it raises or returns non-finite values"
    except StageError:
        raise  # out of memory, or the device is lost: the evaluation's problem
    except Exception as exc:  # noqa: BLE001 - the task's own code at other sizes
        entry, problem = None, f"{type(exc).__name__}: {str(exc)[:200]}"
    if entry is None:
        notes.append(f"shape case {case_text(case)} was left out: the task's reference does not take it ({problem})")
        return None
    entry.update(params=None, case=case.name)
    return entry


def _fallbacks(distribution: str, vary: bool, job: Job) -> list[tuple[str, bool]]:
    """What a trial tries in turn: as planned, without varied parameters, on the task's own inputs."""
    if job.task_inputs_only:
        distribution = "task"
    options = [(distribution, vary), (distribution, False), ("task", False)]
    return [option for i, option in enumerate(options) if option not in options[:i]]


def _deferred_moves(
    loaded: LoadedReference,
    device: torch.device,
    seed: int,
    distribution: str,
    slack_of: ReferenceSlack,
    tolerance: tuple[float, float],
    *,
    slots: list[Any],
    values_seed: int | None,
    base_values: dict[str, torch.Tensor],
) -> Widen:
    """A trial's moved runs, made when the judge asks (:data:`Widen`): on the trial's inputs drawn
    again from its seed, with its varied parameters (``values_seed``; None: as constructed) written
    into ``slots`` and ``base_values`` put back after, exactly as :func:`_reference_trial` would
    have made them."""

    def widen(out: Any) -> tuple[list[Any], list[list[float] | None]] | None:
        if values_seed is not None:
            write_reference(slots, draw_values(slots, values_seed))
        try:
            base = make_inputs(loaded.task_module, seed, distribution, device)
            moves = _sensitivity(loaded, device, base, out, seed, tolerance)
            if moves is None:
                return None
            return _with_moves(slack_of(base, out), moves, out), moves.strays
        finally:
            if values_seed is not None:
                write_reference(slots, base_values)

    return widen


def _with_moves(own: list[Any] | None, moves: _Moves | None, out: Any) -> list[Any] | None:
    """A trial's slack: the reference's own rounding error (``own``), widened by its moves where
    they are not all zero, compact (:func:`.compare.compact_slack`); None where there is neither."""
    if moves is not None and any(m is not None and bool(m.any()) for m in moves.slack):
        before = list(own) if own is not None else [None] * len(moves.slack)
        own = [_wider(a, b) for a, b in zip(before, moves.slack, strict=True)]
    return compact_slack(list(own), out) if own is not None else None


@dataclass
class _Moves:
    """:func:`_sensitivity`'s result: the slack per output tensor, and the strays it allows."""

    slack: list[Any]
    #: per output tensor: ``[allowed, reach]`` (:class:`.compare.Strays`), or None
    strays: list[list[float] | None]


def _sensitivity(
    loaded: LoadedReference,
    device: torch.device,
    base: list[Any],
    out: Any,
    seed: int,
    tolerance: tuple[float, float] | None = None,
) -> _Moves | None:
    """How far the reference's output moves when its floating inputs move by one rounding step.

    Per output tensor, :data:`SENSITIVITY_FACTOR` times the largest ``|out' - out|`` over
    :data:`SENSITIVITY_RUNS` runs, each on inputs moved by relative machine epsilon with a random
    sign per element: ``None`` for a tensor that is not floating; the whole result ``None`` when
    a moved run fails or is not finite (the trial then falls back like a failing one). Where the
    reference is ill-conditioned (attention on large logits picks another key after a rounding)
    no kernel can be held closer to it than this.

    Those few runs' envelope is not every rounding's: the last run's elements beyond the
    envelope of the others and beyond the task's ``tolerance`` (atol, rtol) are counted, and one
    in :data:`STRAY_DIVISOR` of them may lie beyond the slack by up to its largest value.
    """
    gen = torch.Generator(device=device)
    gen.manual_seed(seed ^ 0x5DEECE66D)
    widest: list[Any] | None = None
    escaped: list[int] = []
    for run in range(SENSITIVITY_RUNS):
        moved = []
        for x in clone_inputs(base):
            if isinstance(x, torch.Tensor) and x.is_floating_point() and x.numel():
                # x + x * sign * eps, in place in the clone (int8 signs: an int64 draw took 8 bytes
                # per element, 2 GB on a 512 MB bfloat16 input)
                signs = torch.randint(0, 2, x.shape, generator=gen, device=x.device, dtype=torch.int8)
                step = signs.to(x.dtype).mul_(2).sub_(1).mul_(x).mul_(torch.finfo(x.dtype).eps)
                del signs
                x = x.add_(step)
            moved.append(x)
        try:
            again = run_once(loaded.reference, moved, device, [])
        except Exception:  # noqa: BLE001 - failing one rounding step away: not a trial to judge by
            return None
        if not all_finite(again):
            return None
        moves = rounding_moves(out, again)
        if moves is None:
            return None
        if run == SENSITIVITY_RUNS - 1 and widest is not None and tolerance is not None:
            escaped = _escaped(out, widest, moves, tolerance)
        widest = moves if widest is None else [_wider(a, b) for a, b in zip(widest, moves, strict=True)]
    if widest is None:
        return None
    slack = [None if m is None else m.mul_(SENSITIVITY_FACTOR) for m in widest]
    strays: list[list[float] | None] = []
    for i, m in enumerate(slack):
        allowed = (escaped[i] if i < len(escaped) else 0) // STRAY_DIVISOR
        strays.append([float(allowed), float(m.max())] if m is not None and allowed > 0 else None)
    return _Moves(slack, strays)


def _escaped(out: Any, widest: list[Any], moves: list[Any], tolerance: tuple[float, float]) -> list[int]:
    """Per output tensor: elements where ``moves`` passes both :data:`SENSITIVITY_FACTOR` times
    ``widest`` (the earlier runs' envelope) and the tolerance ``atol + rtol * |out|``."""
    atol, rtol = tolerance
    try:
        leaves = [leaf for _, leaf, _ in flatten_outputs(out, out)]  # the order of the moves' entries
    except OutputCheckError:
        return []
    counts: list[int] = []
    for i, (before, now) in enumerate(zip(widest, moves, strict=True)):
        leaf = leaves[i] if i < len(leaves) else None
        if before is None or now is None or not isinstance(leaf, torch.Tensor) or leaf.shape != now.shape:
            counts.append(0)
            continue
        flat_b, flat_n, flat_o = before.reshape(-1), now.reshape(-1), leaf.detach().reshape(-1)
        count = 0
        for start in range(0, flat_n.numel(), GAP_CHUNK):
            piece = flat_n[start : start + GAP_CHUNK]
            # out of place: a float32 output's .float() is the output the trial keeps
            bound = torch.abs(flat_o[start : start + GAP_CHUNK].float()).mul_(rtol).add_(atol)
            beyond = (piece > bound).logical_and_(piece > flat_b[start : start + GAP_CHUNK] * SENSITIVITY_FACTOR)
            count += int(beyond.sum())
        counts.append(count)
    return counts


def _wider(a: Any, b: Any) -> Any:
    if a is None or b is None:
        return a if b is None else b
    return torch.maximum(a, b)


def _magnitude(value: Any) -> float:
    """The largest finite absolute value among the floating tensors of an output."""
    largest = 0.0
    for _, leaf in output_leaves(value):
        if isinstance(leaf, torch.Tensor) and leaf.is_floating_point() and leaf.numel():
            finite = leaf.detach().float().abs().nan_to_num(0.0, 0.0, 0.0)
            largest = max(largest, float(finite.max()))
    return largest


def _reference_trial(
    loaded: LoadedReference,
    device: torch.device,
    seed: int,
    distribution: str,
    slack_of: ReferenceSlack,
    tensors: list[torch.Tensor],
    slack: bool = True,
    optional: bool = False,
    sensitive: bool = False,
    tolerance: tuple[float, float] | None = None,
) -> dict[str, Any] | None:
    """One trial's reference results; None when a varied distribution, or anything else that makes
    the trial ``optional`` (varied parameters, another shape), makes the reference fail or return
    non-finite values. ``sensitive``: the slack also covers how far the output moves when the
    inputs move by one rounding step (:func:`_sensitivity`; ``tolerance``: the task's atol and rtol,
    which size the strays it allows)."""
    base = make_inputs(loaded.task_module, seed, distribution, device)
    ref_inputs = clone_inputs(base)
    try:
        aliased: list[bool] = []
        started = time.perf_counter()
        out = run_once(loaded.reference, ref_inputs, device, aliased)
        call_s = time.perf_counter() - started
    except BaseException as exc:  # noqa: BLE001 - the task's own code
        kind = classify_exception(exc)
        text = f"{type(exc).__name__}: {str(exc)[:300]}"
        if kind == ErrorType.OOM:
            raise StageError(ErrorType.OOM, f"the reference model ran out of memory: {text}") from None
        if distribution == "task" and not optional:
            raise StageError(ErrorType.HARNESS_ERROR, f"the task's reference fails on its own inputs: {text}") from None
        if not _device_usable(device):
            raise StageError(ErrorType.HARNESS_ERROR, f"{REFERENCE_BROKE_DEVICE} ({distribution}): {text}") from None
        return None
    if (distribution != "task" or optional) and not all_finite(out):
        return None
    moves = _sensitivity(loaded, device, base, out, seed, tolerance) if sensitive else None
    if sensitive and moves is None:
        return None
    changed = inputs_equal(ref_inputs, base)
    entry: dict[str, Any] = {
        "seed": seed,
        "distribution": distribution,
        "aliased": aliased,
        "ref_s": round(call_s, 6),
        "magnitude": _magnitude(out),
        "output": encode_tree(out, tensors),
        "inputs_after": {str(i): encode_tree(ref_inputs[i], tensors) for i in changed},
        # what the candidate's trial may carry back besides its output: every input, changed
        "input_bytes": sum(x.numel() * x.element_size() for x in base if isinstance(x, torch.Tensor)),
    }
    slack_values = _with_moves(slack_of(base, out) if slack else None, moves, out)
    if moves is not None and any(s is not None for s in moves.strays):
        entry["strays"] = moves.strays
    entry["slack"] = encode_tree(slack_values, tensors) if slack_values is not None else None
    return entry
