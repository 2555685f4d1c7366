"""The hidden inputs of the correctness trials, and private copies of inputs.

Each trial calls the task's ``get_inputs()`` under a hidden seed and then, except in trial 0,
replaces every floating-point input with a draw from another distribution (standard normal with
a random scale, a shifted normal, a symmetric uniform, or an affine transform of the task's own
draw). Integer and boolean inputs are never changed. When a perturbed draw makes the
*reference* output non-finite, that trial is redone with the task's own distribution.

Imports torch: use only in evaluator children and tests.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

#: Tensor methods are called through the class: a candidate can shadow a method with an instance
#: attribute on a tensor it returns or receives (``out.detach = ...``), never on the class.
_TENSOR = torch.Tensor

DISTRIBUTIONS = ("task", "normal", "shifted", "uniform", "affine")


def trial_distribution(trial: int, rng: random.Random) -> str:
    """Trial 0 uses the task's own distribution; later trials cycle through the others."""
    if trial == 0:
        return "task"
    others = list(DISTRIBUTIONS[1:])
    return others[(trial - 1 + rng.randrange(len(others))) % len(others)]


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


def make_inputs(task_module: Any, seed: int, distribution: str, device: torch.device) -> list[Any]:
    """The task's inputs for one trial, on ``device``."""
    torch.manual_seed(seed)
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
