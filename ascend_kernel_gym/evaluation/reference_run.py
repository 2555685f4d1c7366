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
distributions), never a reference output.

Imports torch: only the zygote and its children import this module.
"""

from __future__ import annotations

import os
import random
import traceback
from typing import Any, NoReturn

import torch

from ascend_kernel_gym.evaluation.compare import all_finite, inputs_equal
from ascend_kernel_gym.evaluation.errors import REFERENCE_BROKE_DEVICE, StageError, classify_exception
from ascend_kernel_gym.evaluation.inputs import clone_inputs, make_inputs, trial_distribution
from ascend_kernel_gym.evaluation.job import Job
from ascend_kernel_gym.evaluation.process import Prepared, limit_memory
from ascend_kernel_gym.evaluation.reference_model import (
    LoadedReference,
    ReferenceSlack,
    init_seed_of,
    load_reference,
    run_once,
)
from ascend_kernel_gym.evaluation.result import ErrorType
from ascend_kernel_gym.evaluation.tensor_wire import encode_payload_parts, encode_tree
from ascend_kernel_gym.evaluation.wire import RESULT, write_all


def reference_main(job: Job, result_fd: int, token: str, prepared: Prepared) -> NoReturn:
    """Compute the plan and the reference results of ``job``, write them to ``result_fd``, exit."""
    tensors: list[torch.Tensor] = []
    try:
        if prepared.error is not None:
            raise prepared.error
        assert prepared.device is not None
        limit_memory(job)
        header = build_plan(job, prepared.device, tensors)
    except StageError as failure:
        tensors = []
        header = {"error": {"type": failure.error_type.value, "message": failure.message}}
    except BaseException as exc:  # noqa: BLE001 - a harness bug must still produce an answer
        tensors = []
        text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        header = {"error": {"type": ErrorType.HARNESS_ERROR.value, "message": f"reference child: {text}"}}
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


def build_plan(job: Job, device: torch.device, tensors: list[torch.Tensor]) -> dict[str, Any]:
    """The plan header (its tensors appended to ``tensors``); raises :class:`StageError`.

    The random source is drawn in the order the candidate's child draws it (the models' seed
    first), so both build the same reference model and parameters.
    """
    rng = random.Random(job.seed if job.seed is not None else int.from_bytes(os.urandom(8), "little"))
    loaded = load_reference(job, init_seed_of(rng), device)
    slack_of = ReferenceSlack(loaded.reference, device)
    trials: list[dict[str, Any]] = []
    fallback_next = False
    attempts = 0
    while len(trials) < job.num_trials:
        attempts += 1
        if attempts > job.num_trials * 3:
            raise StageError(
                ErrorType.HARNESS_ERROR,
                "the task's reference fails (raises, or returns non-finite values) on the task's own inputs",
            )
        index = len(trials)
        use_task = fallback_next or job.task_inputs_only
        distribution = "task" if use_task else trial_distribution(index, rng)
        fallback_next = False
        seed = rng.getrandbits(62)
        entry = _reference_trial(loaded, device, seed, distribution, slack_of, tensors)
        if entry is None:
            fallback_next = True  # these values break the reference: this trial again, with the task's own
            continue
        trials.append(entry)
    probe_seed = rng.getrandbits(62)
    probe = _reference_trial(loaded, device, probe_seed, "task", slack_of, tensors, slack=False)
    return {"profile": loaded.profile, "trials": trials, "probe": probe}


def _reference_trial(
    loaded: LoadedReference,
    device: torch.device,
    seed: int,
    distribution: str,
    slack_of: ReferenceSlack,
    tensors: list[torch.Tensor],
    slack: bool = True,
) -> dict[str, Any] | None:
    """One trial's reference results; None when a varied distribution makes the reference fail."""
    base = make_inputs(loaded.task_module, seed, distribution, device)
    ref_inputs = clone_inputs(base)
    try:
        out = run_once(loaded.reference, ref_inputs, device)
    except BaseException as exc:  # noqa: BLE001 - the task's own code
        kind = classify_exception(exc)
        text = f"{type(exc).__name__}: {str(exc)[:300]}"
        if kind == ErrorType.OOM:
            raise StageError(ErrorType.OOM, f"the reference model ran out of memory: {text}") from None
        if distribution == "task":
            raise StageError(ErrorType.HARNESS_ERROR, f"the task's reference fails on its own inputs: {text}") from None
        if not _device_usable(device):
            raise StageError(ErrorType.HARNESS_ERROR, f"{REFERENCE_BROKE_DEVICE} ({distribution}): {text}") from None
        return None
    if distribution != "task" and not all_finite(out):
        return None
    changed = inputs_equal(ref_inputs, base)
    entry: dict[str, Any] = {
        "seed": seed,
        "distribution": distribution,
        "output": encode_tree(out, tensors),
        "inputs_after": {str(i): encode_tree(ref_inputs[i], tensors) for i in changed},
    }
    slack_values = slack_of(base, out) if slack else None
    entry["slack"] = encode_tree(list(slack_values), tensors) if slack_values is not None else None
    return entry
