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
from collections.abc import Callable, Iterator
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


#: Tensor methods are called through the class: a candidate can shadow a method with an instance
#: attribute on a tensor it returns or receives (``out.detach = ...``), never on the class.
_TENSOR = torch.Tensor


def storage_ptr(tensor: torch.Tensor) -> int:
    return _TENSOR.untyped_storage(tensor).data_ptr()


def storage_nbytes(tensor: torch.Tensor) -> int:
    return _TENSOR.untyped_storage(tensor).nbytes()


def storage_ptrs(values: Any) -> set[int]:
    """Data pointers of the storages behind every tensor in ``values`` (lists, dicts, modules).

    A module contributes its parameters and buffers and those of its submodules, found by
    :func:`module_tensors` (no method of the module is called).
    """
    ptrs: set[int] = set()

    def visit(v: Any) -> None:
        if issubclass(type(v), torch.Tensor):
            _add_storage_ptr(v, ptrs)
        elif isinstance(v, (list, tuple)):
            for item in v:
                visit(item)
        elif isinstance(v, dict):
            for item in v.values():
                visit(item)
        elif issubclass(type(v), torch.nn.Module):
            for t in module_tensors(v):
                _add_storage_ptr(t, ptrs)

    visit(values)
    return ptrs


def _add_storage_ptr(tensor: torch.Tensor, ptrs: set[int]) -> None:
    # Through the base class with subclass __torch_function__ off: a parameter or buffer of a
    # candidate's type runs none of its own code here. A tensor without an accessible storage
    # (sparse, nested, ...) shares memory with nothing a kernel writes.
    try:
        with torch._C.DisableTorchFunctionSubclass():
            if _TENSOR.device.__get__(tensor).type != "meta" and storage_nbytes(tensor) > 0:
                ptrs.add(storage_ptr(tensor))
    except Exception:  # noqa: BLE001, S110
        pass


#: the genuine ``__dict__`` of an ``nn.Module`` instance (never a class attribute of a subclass)
_MODULE_DICT = torch.nn.Module.__dict__["__dict__"]
_MODULE_TABLES = frozenset({"_parameters", "_buffers", "_modules"})


def module_tensors(module: Any) -> list[torch.Tensor]:
    """Every parameter and buffer (persistent or not) of ``module`` and its submodules.

    Reads the ``_parameters`` / ``_buffers`` / ``_modules`` tables of each module's instance
    dictionary through the base classes (``dict.get``, ``dict.values``), never a method of the
    module: ``state_dict()`` would run a candidate's ``_save_to_state_dict``, state-dict hooks
    and overridden ``named_*`` methods, outside the recorded call. Tables that are not dicts are
    skipped.
    """
    found: list[torch.Tensor] = []
    seen: set[int] = set()
    stack = [module]
    while stack:
        current = stack.pop()
        if id(current) in seen or not issubclass(type(current), torch.nn.Module):
            continue
        seen.add(id(current))
        try:
            attrs = _MODULE_DICT.__get__(current)
        except (AttributeError, TypeError):
            continue
        if not issubclass(type(attrs), dict):
            continue
        # Keys are compared only when they are exact strings: a lookup could call the ``__eq__``
        # of a key object whose hash collides with a table's name.
        tables = {k: v for k, v in dict.items(attrs) if type(k) is str and k in _MODULE_TABLES}
        for name in ("_parameters", "_buffers"):
            table = tables.get(name)
            if issubclass(type(table), dict):
                found.extend(v for v in dict.values(table) if issubclass(type(v), torch.Tensor))
        children = tables.get("_modules")
        if issubclass(type(children), dict):
            stack.extend(dict.values(children))
    return found


def module_buffer(module: Any, qualified_name: str) -> torch.Tensor | None:
    """The buffer at ``qualified_name`` (``"block.mask"``) of ``module``, found through the
    ``_modules`` / ``_buffers`` tables as :func:`module_tensors` does (no method of the module
    runs); None when there is no exact tensor there."""
    *path, leaf = qualified_name.split(".")
    current = module
    for name in [*path, None]:
        if not issubclass(type(current), torch.nn.Module):
            return None
        try:
            attrs = _MODULE_DICT.__get__(current)
        except (AttributeError, TypeError):
            return None
        if not issubclass(type(attrs), dict):
            return None
        table = _str_key_get(attrs, "_modules" if name is not None else "_buffers")
        if not issubclass(type(table), dict):
            return None
        current = _str_key_get(table, name if name is not None else leaf)
    return current if type(current) is torch.Tensor else None


def _str_key_get(table: dict[Any, Any], key: str) -> Any:
    """``table[key]`` compared against exact-string keys only: a key object whose hash collides
    with ``key`` would otherwise have its ``__eq__`` called."""
    for k, v in dict.items(table):
        if type(k) is str and k == key:
            return v
    return None


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
    if ref is None:  # ``(out, None)``: the candidate returns None there too
        if cand is not None:
            raise OutputCheckError(
                "wrong_output_type", f"forward must return None where the reference does, got {_kind(cand)}"
            )
        return []
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


#: Python scalars an output may hold where the reference returns scalars
_SCALAR_TYPES = (int, float, bool)
#: how deep output tuples / lists may nest
MAX_OUTPUT_DEPTH = 16


def _type_name(kind: type) -> str:
    return str(type.__dict__["__name__"].__get__(kind, type))  # no metaclass attribute involved


def plain_output(value: Any, label: str = "output", depth: int = 0) -> Any:
    """A plain copy of a candidate's output structure; runs no code the candidate defined.

    Accepts only exact ``tuple`` / ``list`` containers (rebuilt as new ones), exact
    ``torch.Tensor`` leaves and Python ``int`` / ``float`` / ``bool`` scalars. The type is checked
    before the value is used at all: iterating or measuring a subclass (``__iter__``, ``__len__``,
    ``__getitem__``) would run the candidate's code outside the recorded call. Raises
    :class:`OutputCheckError` (``wrong_output_type``) for anything else.
    """
    kind = type(value)
    if kind is _TENSOR or kind in _SCALAR_TYPES or value is None:
        return value
    if kind is tuple or kind is list:
        if depth >= MAX_OUTPUT_DEPTH:
            raise OutputCheckError("wrong_output_type", f"{label} nests tuples / lists more than {depth} deep")
        items = [plain_output(item, f"{label}[{i}]", depth + 1) for i, item in enumerate(value)]
        return tuple(items) if kind is tuple else items
    name = _type_name(kind)
    if issubclass(kind, torch.Tensor):
        what = f"an instance of {name} (a torch.Tensor subclass)"
    elif issubclass(kind, (tuple, list)):
        base = "tuple" if issubclass(kind, tuple) else "list"
        what = f"an instance of {name} (a {base} subclass)"
    else:
        what = f"a value of type {name}"
    raise OutputCheckError(
        "wrong_output_type",
        f"{label} is {what}; forward must return a plain torch.Tensor, or a plain tuple / list of them "
        "shaped like the reference's output (no subclasses)",
    )


def output_leaves(value: Any, label: str = "output") -> list[tuple[str, Any]]:
    """``(label, leaf)`` for the tensors and scalars of a :func:`plain_output` value, depth-first
    (the order and the labels of :func:`flatten_outputs`' pairs)."""
    if type(value) is tuple or type(value) is list:
        return [leaf for i, item in enumerate(value) for leaf in output_leaves(item, f"{label}[{i}]")]
    return [(label, value)]


def check_output_tensors(value: Any) -> list[torch.Tensor]:
    """The tensors of a :func:`plain_output` value, each checked to be a plain dense tensor.

    Refused (``wrong_output_type``): Python attributes on the tensor, a layout other than
    ``torch.strided`` (sparse, mkldnn), quantized and nested tensors, and tensors whose storage
    cannot be read. Meta tensors pass here and fail the device check.
    """
    tensors = []
    for label, leaf in output_leaves(value):
        if type(leaf) is not _TENSOR:
            continue
        try:
            if object.__getattribute__(leaf, "__dict__"):
                raise OutputCheckError(
                    "wrong_output_type",
                    f"{label} carries Python attributes; return a plain tensor written by your kernel",
                )
            layout = leaf.layout
            if layout != torch.strided:
                raise OutputCheckError(
                    "wrong_output_type",
                    f"{label} has layout {str(layout).replace('torch.', '')}; return a dense tensor (the default "
                    "torch.strided layout, from torch.empty / torch.empty_like) written by your kernel",
                )
            if leaf.is_quantized or leaf.is_nested:
                what = "quantized" if leaf.is_quantized else "nested"
                raise OutputCheckError(
                    "wrong_output_type",
                    f"{label} is a {what} tensor; return a plain dense tensor written by your kernel",
                )
            storage_nbytes(leaf)
            storage_ptr(leaf)
        except OutputCheckError:
            raise
        except Exception as exc:  # noqa: BLE001 - an exotic tensor of the candidate's making
            raise OutputCheckError(
                "wrong_output_type",
                f"{label} cannot be read as a plain tensor ({type(exc).__name__}: {str(exc)[:200]}); return a "
                "dense tensor from torch.empty / torch.empty_like written by your kernel",
            ) from None
        tensors.append(leaf)
    return tensors


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
    if _TENSOR.is_floating_point(ref) or _TENSOR.is_complex(ref):
        bound = atol + rtol * r.abs()
        if slack is not None and tuple(slack.shape) == tuple(r.shape):
            bound = bound + _TENSOR.to(slack, device=c.device, dtype=torch.float64)
    else:
        bound = torch.zeros_like(r)  # integers and booleans (counts, indices, masks) are exact
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
    if a is None or b is None:
        return a is None and b is None
    a, b = _as_tensor(a), _as_tensor(b)
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
        return False
    if a.shape != b.shape:
        return False
    slack = next(slacks, None) if slacks is not None else None
    return quick_close(a, b, atol, rtol, slack) or compare(a, b, atol, rtol, slack).ok


#: floating dtypes whose values float32 holds exactly (the screen below computes in float32)
_SCREEN_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
#: the screen's bound is shrunk by this factor, far more than float32 can round the difference
#: and the bound (a few units of 2**-24 each), so whatever it accepts the float64 check accepts
_SCREEN_MARGIN = 1.0 - 2.0**-16
#: tolerances outside this range could underflow or overflow in float32: left to the full check
_SCREEN_TOL_RANGE = (1e-30, 1e30)


def quick_close(
    cand: torch.Tensor, ref: torch.Tensor, atol: float, rtol: float, slack: torch.Tensor | None = None
) -> bool:
    """A cheap sufficient test for ``compare(cand, ref, atol, rtol, slack).ok``.

    Computes in float32 with a slightly tighter bound (about half the memory traffic of the
    float64 check, and none of its error statistics). True means every element is close and the
    reference is finite everywhere; False means nothing: the caller runs :func:`compare`.
    """
    low, high = _SCREEN_TOL_RANGE
    if (
        cand.dtype != ref.dtype
        or ref.dtype not in _SCREEN_DTYPES
        or cand.device != ref.device
        or not (low <= atol <= high and 0.0 <= rtol <= high)
        or cand.numel() == 0
    ):
        return False
    c = _TENSOR.detach(cand).to(torch.float32)
    r = _TENSOR.detach(ref).to(torch.float32)
    bound = r.abs().mul_(rtol).add_(atol)
    if slack is not None:
        if tuple(slack.shape) != tuple(r.shape) or slack.device != r.device:
            return False
        bound.add_(_TENSOR.to(slack, torch.float32))
    # An infinite reference makes the bound infinite: such elements need the exact check.
    within = (c - r).abs_().le_(bound.mul_(_SCREEN_MARGIN)).logical_and_(torch.isfinite(r))
    return bool(within.all())


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


def _as_tensor(value: Any) -> Any:
    """Python scalars (outputs such as ``loss.item()``) as 0-d tensors; anything else unchanged."""
    return torch.as_tensor(value) if type(value) in _SCALAR_TYPES else value


def outputs_identical(a: Any, b: Any) -> bool:
    """Bitwise equality (NaN equals NaN) of two outputs."""
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(outputs_identical(x, y) for x, y in zip(a, b, strict=False))
    if a is None or b is None:
        return a is None and b is None
    a, b = _as_tensor(a), _as_tensor(b)
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
        return False
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if not torch.is_floating_point(a):
        return bool(torch.equal(a, b))
    if a.device == b.device and bool(torch.equal(a, b)):
        return True  # the common case in one pass (equal() is False wherever a NaN is)
    return bool(((a == b) | (torch.isnan(a) & torch.isnan(b))).all())


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
    if isinstance(value, tuple):
        return tuple(detach_copy(v) for v in value)
    if isinstance(value, list):
        return [detach_copy(v) for v in value]
    return value


def inputs_equal(a: list[Any], b: list[Any]) -> list[int]:
    """Indexes of inputs whose tensors (nested ones too) differ between two input lists (bitwise,
    NaN-aware)."""
    return [i for i, (x, y) in enumerate(zip(a, b, strict=False)) if not _same_tensors(x, y)]


def _same_tensors(x: Any, y: Any) -> bool:
    if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor):
        return outputs_identical(x, y)
    if type(x) in (list, tuple) and type(y) in (list, tuple):
        return len(x) == len(y) and all(_same_tensors(u, v) for u, v in zip(x, y, strict=False))
    if type(x) is dict and type(y) is dict:
        return x.keys() == y.keys() and all(_same_tensors(x[k], y[k]) for k in x)
    return True
