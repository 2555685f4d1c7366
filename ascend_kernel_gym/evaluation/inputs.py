"""The hidden inputs of the correctness trials, the trial schedule, and private copies of inputs.

Each trial calls the task's ``get_inputs()`` under a hidden seed and then, except for the task's
own distribution, replaces every floating-point input with a draw from another distribution:

* shapes of values: standard normal with a random scale (``normal``), a shifted normal
  (``shifted``), a symmetric uniform (``uniform``), an affine transform of the task's own draw
  (``affine``);
* value ranges (:data:`VALUE_RANGES`): ``large`` magnitudes (tens to hundreds: an ``exp`` without
  max-subtraction overflows), ``small`` magnitudes (1e-4 to 1e-3: an epsilon that differs from the
  reference's shows), ``zeros`` (about half the elements exactly zero, a whole leading slice too)
  and ``negative`` (nine in ten elements negative).

Integer and boolean inputs are never changed. When a drawn distribution makes the *reference*
fail or return non-finite values, that trial is redone without it (:mod:`.reference_run`).

:func:`trial_schedule` lays out an evaluation's trials: the task's own inputs first, then the value
ranges and other distributions, some with the model's parameters varied (:mod:`.param_vary`), and
the task's extra shape cases last.

Imports torch: use only in evaluator children and tests.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

#: Tensor methods are called through the class: a candidate can shadow a method with an instance
#: attribute on a tensor it returns or receives (``out.detach = ...``), never on the class.
_TENSOR = torch.Tensor

SHAPES_OF_VALUES = ("normal", "shifted", "uniform", "affine")
VALUE_RANGES = ("large", "small", "zeros", "negative")
DISTRIBUTIONS = ("task", *SHAPES_OF_VALUES, *VALUE_RANGES)
#: what each distribution is called in feedback
DISTRIBUTION_TEXT = {
    "task": "the task's own inputs",
    "normal": "normal inputs",
    "shifted": "shifted normal inputs",
    "uniform": "uniform inputs",
    "affine": "rescaled inputs",
    "large": "large-magnitude inputs (|x| up to hundreds)",
    "small": "small-magnitude inputs (|x| around 1e-4 to 1e-3)",
    "zeros": "inputs with many exact zeros",
    "negative": "mostly negative inputs",
}


@dataclass(frozen=True)
class TrialSpec:
    """What one trial runs on (before its seeds are drawn)."""

    distribution: str
    #: the model's floating parameters and buffers get fresh values (:mod:`.param_vary`)
    vary_params: bool = False
    #: the shape case (``main``: the profile's own sizes)
    case: str = "main"


def trial_schedule(num_trials: int, rng: random.Random, extra_cases: list[str] | None = None) -> list[TrialSpec]:
    """The trials of one evaluation.

    Trial 0 is the task's own inputs at the main shape. With three trials or more, the last
    ``max(1, (n - 1) // 3)`` trials go through the extra shape cases (task's own distribution),
    the first extra case first (the task's odd sizes), and the trials between always include
    ``large`` and ``small`` magnitudes, then the other distributions in a random rotation; every
    other one of them (from the first) varies the model's parameters. With two trials, the second
    varies the parameters with large magnitudes.
    """
    specs = [TrialSpec("task")]
    if num_trials <= 1:
        return specs
    cases = list(extra_cases or [])
    n_cases = min(len(cases), max(1, (num_trials - 1) // 3)) if num_trials >= 3 else 0
    pool = ["zeros", "negative", *SHAPES_OF_VALUES]
    offset = rng.randrange(len(pool))
    middle = ["large", "small", *(pool[offset:] + pool[:offset])]
    for j in range(num_trials - 1 - n_cases):
        specs.append(TrialSpec(middle[j % len(middle)], vary_params=j % 2 == 0))
    for k in range(n_cases):
        specs.append(TrialSpec("task", case=cases[k % len(cases)]))
    return specs


#: mixed into an evaluation's seed for trial 1's, where the plan is deferred
FIRST_TRIAL_SALT = 0x2F1C3A5B


def first_trial_seed(job_seed: int | None) -> int:
    """Trial 1's seed where the plan is deferred (:attr:`.job.Job.defer_plan`): derived from the
    evaluation's seed, so the candidate's child runs trial 1 before the reference child drew the plan."""
    return random.Random((job_seed or 0) ^ FIRST_TRIAL_SALT).getrandbits(62)


def describe_trial(distribution: str, varied: bool, case: str) -> str:
    """How feedback names a trial: ``large-magnitude inputs (...), parameters varied``."""
    parts = [DISTRIBUTION_TEXT.get(distribution, distribution)]
    if varied:
        parts.append("the model's parameters and buffers set to fresh values")
    if case != "main":
        parts.append(f"shape case {case}")
    return ", ".join(parts)


def _generator(device: torch.device, seed: int) -> torch.Generator:
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    return gen


def _uniform(gen: torch.Generator, low: float, high: float) -> float:
    return low + (high - low) * float(torch.rand((), generator=gen, device=gen.device).item())


def perturb(value: Any, distribution: str, gen: torch.Generator) -> Any:
    """Replace a floating tensor by a draw from ``distribution`` (same shape, dtype, device)."""
    if not isinstance(value, torch.Tensor) or not torch.is_floating_point(value) or distribution == "task":
        return value
    shape, dtype, device = value.shape, value.dtype, value.device

    def randn() -> torch.Tensor:
        return torch.randn(shape, generator=gen, device=device, dtype=torch.float32)

    if distribution == "normal":
        out = randn() * _uniform(gen, 0.5, 2.0)
    elif distribution == "shifted":
        out = randn() * _uniform(gen, 0.5, 1.5) + _uniform(gen, -2.0, 2.0)
    elif distribution == "uniform":
        bound = _uniform(gen, 0.5, 3.0)
        out = (torch.rand(shape, generator=gen, device=device, dtype=torch.float32) * 2.0 - 1.0) * bound
    elif distribution == "affine":
        scale = _uniform(gen, 0.5, 2.0) * (1.0 if _uniform(gen, 0.0, 1.0) < 0.7 else -1.0)
        out = value.to(torch.float32) * scale + _uniform(gen, -0.5, 0.5)
    elif distribution == "large":
        out = randn() * _uniform(gen, 40.0, 120.0)
    elif distribution == "small":
        out = randn() * _uniform(gen, 1e-4, 1e-3)
    elif distribution == "zeros":
        out = randn() * (torch.rand(shape, generator=gen, device=device) < 0.5)
        if out.dim() >= 1 and out.shape[0] > 1:
            out[0] = 0.0  # a whole slice of zeros (a row whose norm or variance is zero)
    elif distribution == "negative":
        out = -randn().abs() * _uniform(gen, 0.5, 2.0)
        out = torch.where(torch.rand(shape, generator=gen, device=device) < 0.1, -out, out)
    else:
        raise ValueError(f"unknown distribution {distribution!r}")
    out = out.to(dtype)
    if _TENSOR.is_contiguous(value):
        return out.contiguous()
    placed = clone_layout(value)  # keep the task's strides (a non-dense slice stays one)
    _TENSOR.copy_(placed, out)
    return placed


class _DeviceRedirect(TorchFunctionMode):
    """Sends tensors that task (or candidate) code puts on another accelerator to ``device``.

    KernelBench files written for CUDA call ``.cuda()`` or pass ``device="cuda"``; on the
    interpreter (CPU) or an NPU those tensors go to the evaluator's device instead.
    """

    def __init__(self, device: torch.device) -> None:
        super().__init__()
        self.device = device

    def _foreign(self, value: Any) -> bool:
        if isinstance(value, (str, torch.device)):
            try:
                kind = torch.device(value).type
            except (RuntimeError, ValueError):
                return False
            return kind in ("cuda", "npu") and kind != self.device.type
        return False

    def __torch_function__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None) -> Any:
        kwargs = dict(kwargs or {})
        if func in _ACCELERATOR_METHODS and args and isinstance(args[0], torch.Tensor):
            return torch.Tensor.to(args[0], self.device)
        if self._foreign(kwargs.get("device")):
            kwargs["device"] = self.device
        if func is torch.Tensor.to and len(args) > 1 and self._foreign(args[1]):
            args = (args[0], self.device, *args[2:])
        return func(*args, **kwargs)


_ACCELERATOR_METHODS = tuple(getattr(torch.Tensor, name) for name in ("cuda", "npu") if hasattr(torch.Tensor, name))


def device_redirect(device: torch.device) -> Any:
    """A context in which tensors meant for another accelerator land on ``device``."""
    if device.type == "cuda":
        return contextlib.nullcontext()
    return _DeviceRedirect(device)


def seed_generators(seed: int, device: torch.device) -> None:
    """Seed the generators a task's inputs are drawn from: the CPU's and ``device``'s (as
    ``torch.manual_seed`` seeds them, so the values are the same).

    ``torch.manual_seed`` also seeds every other accelerator PyTorch knows (MTIA, XPU), and for
    one that is not initialised it queues the call with a formatted stack: in an evaluation child
    that was most of each timing round's input draw (about 2 ms of the device's lease, 2026-12-05).
    """
    torch.default_generator.manual_seed(seed)
    if device.type != "cpu":
        seed_all = getattr(getattr(torch, device.type, None), "manual_seed_all", None)
        if seed_all is not None:
            seed_all(seed)


def make_inputs(task_module: Any, seed: int, distribution: str, device: torch.device) -> list[Any]:
    """The task's inputs for one trial, on ``device``."""
    seed_generators(seed, device)
    if device.type == "cpu":
        with device_redirect(device):
            inputs = task_module.get_inputs()
    else:
        with device, device_redirect(device):  # create on the device: a full-size CPU randn takes seconds
            inputs = task_module.get_inputs()
    inputs = map_tensors(list(inputs), lambda x: x.to(device))
    if distribution == "task":
        return inputs
    gen = _generator(device, seed ^ 0x5BD1E995)
    return map_tensors(inputs, lambda x: perturb(x, distribution, gen))


MAX_INPUT_DEPTH = 8


def map_tensors(value: Any, fn: Callable[[torch.Tensor], Any], depth: int = 0) -> Any:
    """``value`` with ``fn`` applied to every tensor in it, through nested lists, tuples and dicts
    (task inputs such as ``forward(self, tensors: list)``)."""
    if isinstance(value, torch.Tensor):
        return fn(value)
    if depth < MAX_INPUT_DEPTH and type(value) in (list, tuple):
        return type(value)(map_tensors(v, fn, depth + 1) for v in value)
    if depth < MAX_INPUT_DEPTH and type(value) is dict:
        return {k: map_tensors(v, fn, depth + 1) for k, v in value.items()}
    return value


def clone_inputs(inputs: list[Any]) -> list[Any]:
    """Private copies of the inputs (nested ones too), each with the layout of the original."""
    return map_tensors(list(inputs), clone_layout)


def copy_into(dst: Any, src: Any) -> None:
    """Copy the tensors of ``src`` into those of ``dst`` (same structure, nested ones too)."""
    if isinstance(dst, torch.Tensor):
        _TENSOR.copy_(dst, src)
    elif type(dst) in (list, tuple):
        for d, s in zip(dst, src, strict=False):
            copy_into(d, s)
    elif type(dst) is dict:
        for key, d in dst.items():
            copy_into(d, src[key])


def clone_layout(x: torch.Tensor) -> torch.Tensor:
    """A copy of ``x`` with the same sizes and strides, also when ``x`` is a strided view that is
    not dense (``randn(m, 2 * n)[:, ::2]``), which ``Tensor.clone`` would make contiguous: a
    kernel that ignores its input's strides must meet them in every trial."""
    if _TENSOR.is_contiguous(x) or x.layout != torch.strided or x.requires_grad:
        return _TENSOR.clone(x)
    try:
        out = torch.empty_strided(tuple(x.shape), tuple(x.stride()), dtype=x.dtype, device=x.device)
        span = _TENSOR.untyped_storage(out).nbytes() // max(1, _TENSOR.element_size(out))
        # The gaps between the elements hold a fixed value (NaN where there is one), so a kernel
        # that reads them gives the same wrong answer on every call.
        torch.as_strided(out, (span,), (1,), 0).fill_(_gap_value(x.dtype))
        _TENSOR.copy_(out, x)  # refused for overlapping strides (expanded inputs): cloned below
    except RuntimeError:
        return _TENSOR.clone(x)
    return out


def _gap_value(dtype: torch.dtype) -> Any:
    if dtype.is_floating_point or dtype.is_complex:
        return float("nan")
    if dtype == torch.bool:
        return True
    return torch.iinfo(dtype).max
