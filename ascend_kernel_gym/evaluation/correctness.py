"""Correctness helpers for evaluator children: hidden inputs, output checks, numeric comparison.

Imports torch: use only in evaluator children and tests.

Inputs: each trial calls the task's ``get_inputs()`` under a hidden seed and then, except in
trial 0, replaces every floating-point input with a draw from another distribution (standard
normal with a random scale, a shifted normal, a symmetric uniform, or an affine transform of the
task's own draw). Integer and boolean inputs are never changed. When a perturbed draw makes
the *reference* output non-finite, that trial is redone with the task's own distribution.

Comparison is done in float64 on the device that produced the outputs (on the interpreter that
is the CPU; on a GPU a float64 compare of a 256 MB output takes milliseconds where a CPU copy
would take a second): ``|cand - ref| <= atol + rtol * |ref|`` element-wise, non-finite
reference values must be matched exactly. The reported relative error is
``max |cand - ref| / (|ref| + atol)`` (finite for zero references).
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

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
    return out.to(dtype).contiguous()


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
    inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs]
    if distribution == "task":
        return inputs
    gen = _generator(device, seed ^ 0x5BD1E995)
    return [perturb(x, distribution, gen) for x in inputs]


def clone_inputs(inputs: list[Any]) -> list[Any]:
    return [_TENSOR.clone(x) if isinstance(x, torch.Tensor) else x for x in inputs]


#: placed copies start a multiple of this many bytes into their allocation: every alignment a
#: kernel may rely on (Triton specialises pointers on divisibility by 16) is kept
PLACEMENT_ALIGN = 512
#: placed copies start at most this far into their allocation
PLACEMENT_SPAN = 8 << 20


def placement_offset(tensor: Any, rng: random.Random) -> int:
    """A random start offset for a placed copy of ``tensor``: a multiple of ``PLACEMENT_ALIGN``
    below ``PLACEMENT_SPAN`` and below the tensor's own size (rounded up)."""
    if not isinstance(tensor, torch.Tensor):
        return 0
    nbytes = _TENSOR.numel(tensor) * _TENSOR.element_size(tensor)
    span = min(PLACEMENT_SPAN, -(-nbytes // PLACEMENT_ALIGN) * PLACEMENT_ALIGN)
    return rng.randrange(max(1, span // PLACEMENT_ALIGN)) * PLACEMENT_ALIGN


def clone_placed(x: Any, offset: int) -> Any:
    """A copy of ``x`` that starts ``offset`` bytes into an allocation of its own.

    The speed of some kernels depends on where in device memory their input lies (on an H200,
    PyTorch's strided transpose copy runs up to 5% apart on inputs 512 bytes to a few MB apart),
    and buffers allocated one after another tend to share that level. Copies placed at random
    offsets sample it. Anything that cannot be placed (not a dense contiguous device tensor)
    is cloned as usual.
    """
    if not isinstance(x, torch.Tensor):
        return x
    placeable = (
        offset > 0
        and x.device.type != "meta"
        and x.layout == torch.strided
        and not x.requires_grad
        and _TENSOR.is_contiguous(x)
        and _TENSOR.numel(x) > 0
    )
    if not placeable:
        return _TENSOR.clone(x)
    nbytes = _TENSOR.numel(x) * _TENSOR.element_size(x)
    try:
        raw = torch.empty(offset + nbytes, dtype=torch.uint8, device=x.device)
        placed = raw[offset : offset + nbytes].view(x.dtype).view(x.shape)
    except (RuntimeError, TypeError):  # a dtype with no byte view on this backend
        return _TENSOR.clone(x)
    _TENSOR.copy_(placed, x)
    return placed


#: Tensor methods are called through the class: a candidate can shadow a method with an instance
#: attribute on a tensor it returns or receives (``out.detach = ...``), never on the class.
_TENSOR = torch.Tensor


def storage_ptr(tensor: torch.Tensor) -> int:
    return _TENSOR.untyped_storage(tensor).data_ptr()


def storage_nbytes(tensor: torch.Tensor) -> int:
    return _TENSOR.untyped_storage(tensor).nbytes()


def storage_ptrs(values: Any) -> set[int]:
    """Data pointers of the storages behind every tensor in ``values`` (lists, dicts, modules)."""
    ptrs: set[int] = set()

    def visit(v: Any) -> None:
        if isinstance(v, torch.Tensor):
            if v.device.type != "meta" and storage_nbytes(v) > 0:
                ptrs.add(storage_ptr(v))
        elif isinstance(v, (list, tuple)):
            for item in v:
                visit(item)
        elif isinstance(v, dict):
            for item in v.values():
                visit(item)
        elif isinstance(v, torch.nn.Module):
            for t in torch.nn.Module.state_dict(v, keep_vars=True).values():
                visit(t)

    visit(values)
    return ptrs


class OutputCheckError(Exception):
    """A check on the candidate's output failed; ``kind`` is an ErrorType value."""

    def __init__(self, kind: str, message: str, **metrics: Any) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.metrics = metrics


def flatten_outputs(cand: Any, ref: Any) -> list[tuple[torch.Tensor, torch.Tensor, str]]:
    """Pair candidate and reference output tensors; raises OutputCheckError on a structure mismatch."""
    if isinstance(ref, (tuple, list)):
        if not isinstance(cand, (tuple, list)):
            raise OutputCheckError(
                "wrong_output_type",
                f"forward must return a {type(ref).__name__} of {len(ref)} tensors, got {_kind(cand)}",
            )
        if len(cand) != len(ref):
            raise OutputCheckError(
                "shape_mismatch", f"forward returned {len(cand)} outputs, the reference returns {len(ref)}"
            )
        pairs = []
        for i, (c, r) in enumerate(zip(cand, ref, strict=False)):
            pairs.extend((cc, rr, f"output[{i}]" + label[6:]) for cc, rr, label in flatten_outputs(c, r))
        return pairs
    if not isinstance(ref, torch.Tensor):
        ref = torch.as_tensor(ref)
        if isinstance(cand, (int, float, bool)):
            cand = torch.as_tensor(cand)
    if type(cand) is not torch.Tensor:
        raise OutputCheckError(
            "wrong_output_type",
            f"forward must return exactly a torch.Tensor, got {_kind(cand)}",
        )
    return [(cand, ref, "output")]


def _kind(value: Any) -> str:
    if type(value) is torch.Tensor:
        return "a single torch.Tensor"
    if isinstance(value, torch.Tensor):
        return f"an instance of {type(value).__name__} (a tensor subclass)"
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)} items"
    return f"a value of type {type(value).__name__}"


@dataclass
class Comparison:
    ok: bool
    max_abs_err: float
    max_rel_err: float
    bad_count: int = 0
    first_bad_index: list[int] = field(default_factory=list)
    cand_value: float | None = None
    ref_value: float | None = None
    nonfinite: bool = False


def compare(
    cand: torch.Tensor, ref: torch.Tensor, atol: float, rtol: float, slack: torch.Tensor | None = None
) -> Comparison:
    """Element-wise tolerance check in float64 (shapes must already match).

    ``slack`` (from :func:`precision_slack`) widens each element's tolerance by the reference's
    own rounding error.
    """
    c = _TENSOR.detach(cand).to(torch.float64)
    r = _TENSOR.detach(ref).to(device=c.device, dtype=torch.float64)
    if c.numel() == 0:
        return Comparison(True, 0.0, 0.0)
    finite_r = torch.isfinite(r)
    finite_c = torch.isfinite(c)
    diff = (c - r).abs()
    bound = atol + rtol * r.abs()
    if slack is not None and tuple(slack.shape) == tuple(r.shape):
        bound = bound + _TENSOR.to(slack, device=c.device, dtype=torch.float64)
    within = diff <= bound
    same_special = (c == r) | (torch.isnan(c) & torch.isnan(r))
    good = torch.where(finite_r, within & finite_c, same_special)
    both = finite_r & finite_c
    if bool(both.any()):
        d = torch.where(both, diff, torch.zeros_like(diff))
        max_abs = float(d.max())
        rel = d / (r.abs() + max(atol, 1e-12))
        max_rel = float(torch.where(both, rel, torch.zeros_like(rel)).max())
    else:
        max_abs = max_rel = 0.0
    bad = ~good
    bad_count = int(bad.sum())
    if bad_count == 0:
        return Comparison(True, max_abs, max_rel)
    flat = int(torch.nonzero(bad.reshape(-1))[0, 0])
    index = _unravel(flat, tuple(c.shape))
    nonfinite = bool((finite_r & ~finite_c).any())
    if nonfinite:
        max_abs = max_rel = float("inf")
    return Comparison(
        False,
        max_abs,
        max_rel,
        bad_count=bad_count,
        first_bad_index=list(index),
        cand_value=float(c.reshape(-1)[flat]),
        ref_value=float(r.reshape(-1)[flat]),
        nonfinite=nonfinite,
    )


def _unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    index = []
    for size in reversed(shape):
        index.append(flat % size if size else 0)
        flat = flat // size if size else 0
    return tuple(reversed(index))


def outputs_close(a: Any, b: Any, atol: float, rtol: float, slack: list[torch.Tensor | None] | None = None) -> bool:
    """Whether two outputs (tensors or sequences of tensors) agree within tolerance.

    ``slack`` holds one entry per tensor of ``b`` in depth-first order (see :func:`precision_slack`).
    """
    return _close(a, b, atol, rtol, iter(slack) if slack is not None else None)


def _close(a: Any, b: Any, atol: float, rtol: float, slacks: Iterator[torch.Tensor | None] | None) -> bool:
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_close(x, y, atol, rtol, slacks) for x, y in zip(a, b, strict=False))
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
        return False
    if a.shape != b.shape:
        return False
    return compare(a, b, atol, rtol, next(slacks, None) if slacks is not None else None).ok


#: dtypes whose PyTorch reference carries a rounding error worth allowing for
LOW_PRECISION = (torch.float16, torch.bfloat16)


def has_low_precision(value: Any) -> bool:
    """Whether any tensor in an output is float16 / bfloat16."""
    if isinstance(value, (tuple, list)):
        return any(has_low_precision(v) for v in value)
    return isinstance(value, torch.Tensor) and value.dtype in LOW_PRECISION


def upcast(values: list[Any]) -> list[Any]:
    """The inputs with float16 / bfloat16 tensors as float32 (for the high-precision reference)."""
    return [_TENSOR.float(x) if isinstance(x, torch.Tensor) and x.dtype in LOW_PRECISION else x for x in values]


def precision_slack(ref: Any, ref_hi: Any) -> list[torch.Tensor | None] | None:
    """The reference's own rounding error per output tensor: ``|ref - ref_hi|`` where both are finite.

    ``ref_hi`` is the same model run in float32. A float16 reference rounds every intermediate
    (a matmul's inputs, a softmax's exponentials); on large outputs a few elements then sit
    further than the tolerance from the true value, and a candidate that computes in float32 and
    rounds once is marked wrong at random. The slack widens each element's tolerance by exactly
    that error. One entry per reference tensor in depth-first order (``None``: no slack);
    ``None`` when the structures differ.
    """
    try:
        pairs = flatten_outputs(ref_hi, ref)
    except OutputCheckError:
        return None
    slack: list[torch.Tensor | None] = []
    for hi, lo, _ in pairs:
        if lo.dtype not in LOW_PRECISION or tuple(hi.shape) != tuple(lo.shape):
            slack.append(None)
            continue
        lo64 = _TENSOR.to(lo, torch.float64)
        hi64 = _TENSOR.to(hi, device=lo.device, dtype=torch.float64)
        err = torch.where(torch.isfinite(lo64) & torch.isfinite(hi64), (lo64 - hi64).abs(), torch.zeros_like(lo64))
        slack.append(_TENSOR.to(err, torch.float32))
    return slack


def outputs_identical(a: Any, b: Any) -> bool:
    """Bitwise equality (NaN equals NaN) of two outputs."""
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(outputs_identical(x, y) for x, y in zip(a, b, strict=False))
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
        return False
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if torch.is_floating_point(a):
        return bool(((a == b) | (torch.isnan(a) & torch.isnan(b))).all())
    return bool(torch.equal(a, b))


def all_finite(value: Any) -> bool:
    if isinstance(value, (tuple, list)):
        return all(all_finite(v) for v in value)
    if isinstance(value, torch.Tensor) and (torch.is_floating_point(value) or torch.is_complex(value)):
        return bool(torch.isfinite(value).all())
    return True


def detach_copy(value: Any) -> Any:
    """A private copy of an output (so later calls cannot change what we compare)."""
    if isinstance(value, torch.Tensor):
        return _TENSOR.clone(_TENSOR.detach(value))
    if isinstance(value, (tuple, list)):
        return type(value)(detach_copy(v) for v in value)
    return value


def inputs_equal(a: list[Any], b: list[Any]) -> list[int]:
    """Indexes of tensor inputs that differ between two input lists (bitwise, NaN-aware)."""
    changed = []
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor) and not outputs_identical(x, y):
            changed.append(i)
    return changed
