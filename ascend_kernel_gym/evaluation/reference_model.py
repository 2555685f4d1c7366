"""The task's reference model, built and checked the same way in every process that needs it.

Both children of an evaluation build it from the same seed: the candidate's child (for the
parameters it hands to ``ModelNew`` and for the timing baseline) and the reference child
(:mod:`.reference_run`, whose outputs the judge compares against). Before any candidate code
runs, :func:`load_reference` loads the task at its profile, builds the model and runs it twice on
the task's own inputs: a reference that fails or is random is the task's problem, reported as
``harness_error``.

Imports torch: only the zygote and its children import this module.
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from ascend_kernel_gym.evaluation.compare import has_low_precision, outputs_close, precision_slack, upcast
from ascend_kernel_gym.evaluation.errors import StageError, classify_exception, reference_failure
from ascend_kernel_gym.evaluation.inputs import clone_inputs, device_redirect, make_inputs
from ascend_kernel_gym.evaluation.job import Job
from ascend_kernel_gym.evaluation.outputs import MAX_OUTPUT_DEPTH, detach_copy, output_leaves
from ascend_kernel_gym.evaluation.param_vary import floating_slots
from ascend_kernel_gym.evaluation.result import ErrorType
from ascend_kernel_gym.evaluation.tensors import module_tensors, storage_ptr, storage_ptrs
from ascend_kernel_gym.tasks.runtime import instantiate
from ascend_kernel_gym.tasks.task import AUTO_SMALL_TAG


class TaskProblemError(Exception):
    """The task itself cannot be evaluated (found before any candidate code runs)."""


@dataclass
class LoadedReference:
    """The task at the profile evaluated, and its reference model."""

    task_module: Any
    init_inputs: list[Any]
    reference: Any
    #: the profile evaluated (``full`` when the derived small sizes did not fit the task)
    profile: str
    warnings: list[str] = field(default_factory=list)
    #: the operators one call of the reference dispatched (``aten.clone``, ...)
    ops: frozenset[str] = frozenset()


def init_seed_of(rng: random.Random) -> int:
    """The seed the models are built with: the first draw of the evaluation's random source."""
    return rng.getrandbits(31)


#: how a ``harness_error`` starts when the reference cannot be built or run on the task's inputs
BUILD_FAILED = "the reference model could not be built or run on the task's own inputs"


def load_reference(job: Job, init_seed: int, device: torch.device) -> LoadedReference:
    """Load the task, build the reference and check it; raises :class:`StageError` (``harness_error``)."""
    try:
        task_module = instantiate(job.task, job.profile)
    except Exception as exc:  # noqa: BLE001 - a broken task is the harness's problem
        raise StageError(
            ErrorType.HARNESS_ERROR, f"the task could not be loaded: {type(exc).__name__}: {exc}"
        ) from None
    check_seed = random.Random(init_seed ^ 0x2545F491).getrandbits(62)
    atol, rtol = job.task.atol, job.task.rtol
    try:
        init_inputs, reference = build_reference(task_module, init_seed, device)
        ops = check_reference(task_module, reference, device, check_seed, atol, rtol)
        return LoadedReference(task_module, init_inputs, reference, job.profile, ops=ops)
    except TaskProblemError as problem:
        raise StageError(ErrorType.HARNESS_ERROR, f"the task cannot be evaluated: {problem}") from None
    except Exception as exc:  # noqa: BLE001
        if not (job.profile == "small" and AUTO_SMALL_TAG in job.task.tags) or classify_exception(exc) == ErrorType.OOM:
            raise reference_failure(exc, BUILD_FAILED) from None
        note = (
            f"the automatically derived small sizes do not fit this task ({type(exc).__name__}); evaluated with the "
            "file's own sizes (full profile)"
        )
    try:
        task_module = instantiate(job.task, "full")
        init_inputs, reference = build_reference(task_module, init_seed, device)
        ops = check_reference(task_module, reference, device, check_seed, atol, rtol)
    except TaskProblemError as problem:
        raise StageError(ErrorType.HARNESS_ERROR, f"the task cannot be evaluated: {problem}") from None
    except Exception as exc2:  # noqa: BLE001
        raise reference_failure(exc2, BUILD_FAILED) from None
    return LoadedReference(task_module, init_inputs, reference, "full", [note], ops=ops)


def build_reference(task_module: Any, init_seed: int, device: torch.device) -> tuple[list[Any], Any]:
    """The task's init inputs and its reference model on ``device`` (seeded like the candidate's)."""
    torch.manual_seed(init_seed)
    with device_redirect(device):
        init_inputs = task_module.get_init_inputs()
    torch.manual_seed(init_seed + 1)
    with device, device_redirect(device):
        reference = task_module.Model(*init_inputs)
    return init_inputs, reference.to(device)


def check_reference(
    task_module: Any, reference: Any, device: torch.device, seed: int, atol: float, rtol: float
) -> frozenset[str]:
    """Run the reference twice on one set of the task's own inputs, before any candidate code;
    returns the operators the second call dispatched (``aten.clone``, ...).

    A reference that raises here, returns what no candidate can return, or gives different
    outputs for the same inputs (dropout in training mode, an RNG it draws from) is the task's
    problem: reported as such instead of as the candidate's failure in every trial.
    """
    inputs = make_inputs(task_module, seed, "task", device)
    names = _OperatorNames()
    with torch.no_grad(), device_redirect(device):
        first = detach_copy(reference(*clone_inputs(inputs)))
        try:
            with names:
                second = reference(*clone_inputs(inputs))
        except Exception:  # noqa: BLE001 - an operator the mode cannot pass on: run it plainly, ops unknown
            names.seen.clear()
            second = reference(*clone_inputs(inputs))
    unsupported = _unsupported_output(first)
    if unsupported:
        raise TaskProblemError(
            f"the reference returns {unsupported}; outputs must be tensors, Python numbers, None, or tuples / "
            "lists of them"
        )
    if not outputs_close(first, second, atol, rtol):
        raise TaskProblemError(
            "the reference model gives different outputs for the same inputs (random operations such as "
            "dropout in training mode, or an RNG it draws from), so no kernel can match it"
        )
    return frozenset(names.seen)


class _OperatorNames(TorchDispatchMode):
    """Collects the names of the operators dispatched while it is on (``aten.clone``, ...)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[str] = set()

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None) -> Any:
        packet = getattr(func, "overloadpacket", None)
        name = getattr(packet, "__name__", None) or str(func).split(".")[1]
        self.seen.add(f"{getattr(func, 'namespace', None) or str(func).split('.')[0]}.{name}")
        return func(*args, **(kwargs or {}))


def run_once(model: Any, inputs: list[Any], device: torch.device, aliased: list[bool] | None = None) -> Any:
    """``model(*inputs)`` without gradients, finished on the device; a private copy of the output.

    ``aliased``: filled, per output leaf (depth-first), with whether it shares storage with an
    input or a tensor of the model (an in-place reference such as ``torch.relu_`` returns its input).
    """
    with torch.no_grad(), device_redirect(device):
        out = model(*inputs)
    if device.type in ("cuda", "npu"):
        getattr(torch, device.type).synchronize()
    if aliased is not None:
        ptrs = storage_ptrs(inputs) | storage_ptrs(module_tensors(model))
        aliased.extend(isinstance(leaf, torch.Tensor) and storage_ptr(leaf) in ptrs for _, leaf in output_leaves(out))
    return detach_copy(out)


class ReferenceSlack:
    """The float16 / bfloat16 reference's own rounding error, from the same model run in float32.

    The float32 copy is made at the first low-precision output and kept; before each run it takes
    the reference's floating parameters and buffers as they are then (a trial with varied
    parameters writes them into the reference: a copy left as constructed made the slack as large
    as the parameters' effect, and a kernel that froze its weights at its first call passed those
    trials). A reference that cannot be copied or run in float32 gets no slack (``None``), never
    a failed candidate.
    """

    def __init__(self, reference: Any, device: torch.device) -> None:
        self.reference = reference
        self.device = device
        self.high: Any = None  # None: not made yet; False: cannot be made

    def __call__(self, inputs: list[Any], out: Any) -> list[Any] | None:
        """The slack of ``out``, the reference's output on ``inputs``."""
        if self.high is False or not has_low_precision(out):
            return None
        try:
            if self.high is None:
                is_module = isinstance(self.reference, torch.nn.Module)
                self.high = torch.nn.Module.float(copy.deepcopy(self.reference)) if is_module else False
                if self.high is False:
                    return None
            self._take_values()
            return precision_slack(out, run_once(self.high, upcast(clone_inputs(inputs)), self.device))
        except Exception:  # noqa: BLE001 - a reference that cannot run in float32 gets no slack
            self.high = False
            return None

    def _take_values(self) -> None:
        """Copy the reference's floating parameters and buffers into the float32 copy's (same names)."""
        own = dict(self.high.named_parameters())
        own.update(self.high.named_buffers())
        with torch.no_grad():
            for name, tensor in floating_slots(self.reference):
                target = own.get(name)
                if target is None or target.shape != tensor.shape:
                    raise ValueError(f"the float32 copy has no tensor {name} of shape {tuple(tensor.shape)}")
                target.copy_(tensor)


def _unsupported_output(value: Any, depth: int = 0) -> str:
    if isinstance(value, torch.Tensor) or value is None or type(value) in (int, float, bool):
        return ""
    if isinstance(value, (tuple, list)) and depth < MAX_OUTPUT_DEPTH:
        return next((found for v in value if (found := _unsupported_output(v, depth + 1))), "")
    return f"a value of type {type(value).__name__}"
