"""A cost model on Triton's interpreter: count what a kernel does, estimate its time on a chip.

Counting (:func:`instrument`): while the context is open, Triton's interpreter is patched to
count, per launch and per program,

- bytes loaded and stored (``create_masked_load`` / ``create_masked_store``, which every load,
  store, block-pointer and descriptor access goes through; masked-off lanes are not counted),
  and the number of load / store instructions (tiles);
- atomics (elements, read + write bytes);
- dot FLOPs, ``2 * M * N * K`` per ``tl.dot`` (x batch for 3-D dots), split by operand width;
- vector element operations: elements produced by the interpreter's unary / binary / ternary
  ops and elements consumed by reductions and scans (index and mask arithmetic included);
- programs launched, the grid, ``num_warps`` and the bytes of the launch's tensor arguments.

The hooks read the interpreter's arguments by parameter name (then position, then type), so the
builder signatures of triton 3.6 and 3.9 both work; a count that still fails is recorded as
``uncounted`` (the counts are then lower bounds) and never breaks the kernel. Inside the block,
``tl.tensor.__index__`` (``range(n)`` over a runtime ``n``) converts through ``.item()``: triton
3.6's ``int(handle.data)`` on a 1-element array is a TypeError with NumPy >= 2.4.

With ``max_programs = n`` only a sample of the programs of a large grid runs (``n - 1`` linear
program ids evenly spaced over ``[0, P - 2]``, plus the last program ``P - 1``) and the counts are
extrapolated: ``total = c(last) + (P - 1) / (n - 1) * sum(c(the other sampled programs))``. This is
exact when all programs but the last do the same work (uniform grids with a masked tail) and,
up to the rounding of the sample positions, when the work grows linearly with the program id
(causal attention); otherwise it is the error of a mean over evenly spaced programs (docs/ascend.md).
Sampled runs leave the kernel's outputs partly unwritten: they are for estimates only.

Estimating (:func:`estimate`): the per-launch formula is in :func:`_launch_time` and in
docs/ascend.md. Everything returned is labelled ``"estimate"`` with the chip and the
assumptions. :func:`task_roofline` gives the floor for a task (inputs read once, outputs written
once, the reference's matmul-family FLOPs) and a per-operator "idealised eager PyTorch"
estimate of the reference, from which ``est_speedup`` is derived.

:func:`estimate_kernel` runs one task + candidate in a fresh Python process with
``TRITON_INTERPRET=1`` (so it works from CUDA / NPU processes) and returns the estimate dict.

Imports torch / triton only inside functions.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import math
import operator
import os
import pickle
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ascend_kernel_gym.ascend.chips import ChipProfile, resolve_chip
from ascend_kernel_gym.backends.interpreter_compat import scalar as _scalar
from ascend_kernel_gym.backends.interpreter_compat import wrap_patch_lang_tensor

__all__ = [
    "KernelCounters",
    "LaunchCounters",
    "estimate",
    "estimate_in_process",
    "estimate_kernel",
    "estimate_variants",
    "instrument",
    "reference_costs",
    "sample_program_ids",
    "task_roofline",
]

LABEL = "estimate"
_RESULT_MARK = "AKG_COST_MODEL_RESULT "
_FIELDS = (
    "bytes_loaded",
    "bytes_stored",
    "memops",
    "dot_flops_16",
    "dot_flops_32",
    "vector_ops",
    "atomic_ops",
    "dot_flops_ieee",
)


# ----------------------------------------------------------------------------- counters


@dataclass
class LaunchCounters:
    """Counts for one kernel launch (extrapolated to the whole grid when sampled)."""

    kernel: str
    grid: list[int] = field(default_factory=list)
    programs: int = 0
    programs_run: int = 0
    num_warps: int | None = None
    arg_bytes: int = 0
    bytes_loaded: float = 0.0
    bytes_stored: float = 0.0
    memops: float = 0.0
    dot_flops_16: float = 0.0
    dot_flops_32: float = 0.0
    #: fp32 dots with ``input_precision="ieee"`` (CUDA cores on a GPU, not tensor cores)
    dot_flops_ieee: float = 0.0
    vector_ops: float = 0.0
    atomic_ops: float = 0.0
    #: interpreter calls (in the programs run) that could not be counted: the counts are lower bounds
    uncounted: int = 0

    @property
    def sampled(self) -> bool:
        return self.programs_run < self.programs

    @property
    def bytes_moved(self) -> float:
        return self.bytes_loaded + self.bytes_stored

    @property
    def dot_flops(self) -> float:
        return self.dot_flops_16 + self.dot_flops_32 + self.dot_flops_ieee

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["sampled"] = self.sampled
        return data


@dataclass
class KernelCounters:
    """All launches counted inside one :func:`instrument` block."""

    launches: list[LaunchCounters] = field(default_factory=list)
    max_programs: int | None = None

    def total(self, name: str) -> float:
        return float(sum(getattr(launch, name) for launch in self.launches))

    @property
    def bytes_moved(self) -> float:
        return self.total("bytes_loaded") + self.total("bytes_stored")

    @property
    def dot_flops(self) -> float:
        return self.total("dot_flops_16") + self.total("dot_flops_32") + self.total("dot_flops_ieee")

    @property
    def programs(self) -> int:
        return int(sum(launch.programs for launch in self.launches))

    def to_dict(self) -> dict[str, Any]:
        return {"max_programs": self.max_programs, "launches": [launch.to_dict() for launch in self.launches]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> KernelCounters:
        launches = []
        for item in data.get("launches", []):
            values = {k: v for k, v in item.items() if k != "sampled"}
            launches.append(LaunchCounters(**values))
        return cls(launches=launches, max_programs=data.get("max_programs"))


def sample_program_ids(programs: int, max_programs: int | None) -> list[int] | None:
    """Linear program ids to run; ``None`` = all.

    ``max_programs - 1`` ids evenly spaced over ``[0, programs - 2]`` plus the last program, which
    often differs (a masked tail) and is extrapolated separately (:func:`extrapolate`).
    """
    if programs < 0:
        raise ValueError(f"programs must be >= 0, got {programs}")
    if max_programs is None or programs <= max_programs:
        return None
    if max_programs < 2:
        raise ValueError(f"max_programs must be >= 2 to sample, got {max_programs}")
    n = max_programs - 1
    span = programs - 2
    body = {round(i * span / (n - 1)) for i in range(n)} if n > 1 else {0}
    return sorted(body | {programs - 1})


def extrapolate(samples: list[tuple[int, list[float]]], programs: int) -> list[float]:
    """Totals over ``programs`` programs from per-program counts of a sample (see module doc)."""
    if not samples:
        return [0.0] * len(_FIELDS)
    width = len(samples[0][1])
    ran = {idx for idx, _ in samples}
    if len(ran) >= programs:
        return [sum(c[i] for _, c in samples) for i in range(width)]
    last = [c for idx, c in samples if idx == programs - 1]
    others = [c for idx, c in samples if idx != programs - 1]
    if not others:
        return [x * programs for x in last[0]]
    scale = (programs - (1 if last else 0)) / len(others)
    base = [sum(c[i] for c in others) * scale for i in range(width)]
    if last:
        base = [b + x for b, x in zip(base, last[0], strict=True)]
    return base


class _State:
    def __init__(self, max_programs: int | None) -> None:
        self.counters = KernelCounters(max_programs=max_programs)
        self.max_programs = max_programs
        self.launch: LaunchCounters | None = None
        self.samples: list[tuple[int, list[float]]] = []
        self.current: list[float] | None = None
        self.pending_executor: Any = None
        self.suspended = 0
        self.sample_set: set[int] | None = None
        #: hook calls of the current launch whose counting raised (see ``LaunchCounters.uncounted``)
        self.uncounted = 0

    def add(self, index: int, amount: float) -> None:
        if self.current is not None and not self.suspended:
            self.current[index] += amount


_ACTIVE: _State | None = None


def _elem_bytes(handle: Any) -> int:
    dtype = getattr(handle, "dtype", None)
    while hasattr(dtype, "element_ty"):
        dtype = dtype.element_ty
    bits = int(getattr(dtype, "primitive_bitwidth", 32) or 32)
    return max(1, bits // 8)


def _np_data(value: Any) -> Any:
    """The NumPy payload of an interpreter ``TensorHandle`` (or ``value`` itself when it is
    already an array or a scalar; an ndarray's own ``.data`` is a raw buffer, never unwrapped)."""
    import numpy as np

    if isinstance(value, (np.ndarray, np.generic)):
        return value
    return getattr(value, "data", value)


def _to_int(value: Any) -> int:
    """``int(value)`` for Python ints, NumPy scalars / 0-d / 1-element arrays, interpreter
    ``TensorHandle`` / ``tl.tensor`` scalars and anything with ``__index__``."""
    if isinstance(value, int):
        return int(value)
    with contextlib.suppress(TypeError):
        return operator.index(value)
    handle = getattr(value, "handle", None)  # a tl.tensor
    return int(_scalar(_np_data(value if handle is None else handle)))


def _is_pointer(value: Any) -> bool:
    is_ptr = getattr(getattr(value, "dtype", None), "is_ptr", None)
    try:
        return callable(is_ptr) and bool(is_ptr())
    except Exception:  # noqa: BLE001 - a dtype of another kind
        return False


def _active_lanes(mask: Any, shape: Any) -> int:
    """Lanes of ``shape`` that ``mask`` (a handle, an array, a scalar or ``None``) leaves on."""
    import numpy as np

    if mask is None:
        return math.prod(int(d) for d in shape)
    data = _np_data(mask)
    try:
        return int(np.count_nonzero(np.broadcast_to(data, shape)))
    except ValueError:
        return int(np.count_nonzero(data))


def _tensor_arg_bytes(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    seen: set[tuple[int, int]] = set()
    total = 0

    def visit(value: Any) -> None:
        nonlocal total
        base = getattr(value, "base", None) if type(value).__name__ == "TensorWrapper" else value
        if hasattr(base, "data_ptr") and hasattr(base, "numel") and hasattr(base, "element_size"):
            key = (int(base.data_ptr()), int(base.numel()))
            if key not in seen:
                seen.add(key)
                total += int(base.numel()) * int(base.element_size())
        elif isinstance(value, (tuple, list)):
            for item in value:
                visit(item)

    for value in list(args) + list(kwargs.values()):
        visit(value)
    return total


class _ProgramRunner:
    """Stands in for the interpreted kernel inside ``GridExecutor``'s program loop."""

    def __init__(self, fn: Any, state: _State) -> None:
        self.fn = fn
        self.state = state

    def __call__(self, **kwargs: Any) -> Any:
        from triton.runtime.interpreter import interpreter_builder

        state = self.state
        x, y, z = (_to_int(i) for i in interpreter_builder.grid_idx)
        _, ny, nz = (_to_int(d) for d in interpreter_builder.grid_dim)
        index = (x * ny + y) * nz + z
        if state.sample_set is not None and index not in state.sample_set:
            return None
        state.current = [0.0] * len(_FIELDS)
        try:
            return self.fn(**kwargs)
        finally:
            state.samples.append((index, state.current))
            state.current = None


@contextlib.contextmanager
def instrument(max_programs: int | None = None) -> Iterator[KernelCounters]:
    """Count loads, stores, dots and element ops of every interpreted launch in the block.

    Args:
        max_programs: run at most this many programs per launch (evenly spaced, first and last
            included) and extrapolate; ``None`` runs every program (exact counts, correct outputs).

    Yields:
        The :class:`KernelCounters`, filled as launches finish.

    Raises:
        RuntimeError: Triton's interpreter is not active (set ``TRITON_INTERPRET=1`` before
            importing triton) or another ``instrument()`` block is open.
    """
    global _ACTIVE
    if max_programs is not None and max_programs < 2:
        raise ValueError(f"max_programs must be None or >= 2, got {max_programs}")
    if _ACTIVE is not None:
        raise RuntimeError("instrument() blocks cannot be nested")
    import triton.runtime.interpreter as interp

    if not _interpreter_active():
        raise RuntimeError(
            "the cost model needs Triton's interpreter: set TRITON_INTERPRET=1 before triton is imported"
        )
    state = _State(max_programs)
    builder_cls = interp.InterpreterBuilder
    saved: list[tuple[Any, str, Any]] = []

    def patch(owner: Any, name: str, make: Any) -> None:
        original = owner.__dict__.get(name) if isinstance(owner, type) else getattr(owner, name, None)
        if original is None:
            original = getattr(owner, name, None)
        if original is None:
            return
        saved.append((owner, name, owner.__dict__[name] if name in owner.__dict__ else None))
        setattr(owner, name, make(original))

    def counting(count: Any) -> None:
        """Run one count; a failure (an interpreter whose internals drifted) is recorded on the
        launch (``uncounted``), never raised into the candidate's kernel."""
        if state.current is None or state.suspended:
            return
        try:
            count()
        except Exception:  # noqa: BLE001 - counting must never break the kernel it counts
            state.uncounted += 1

    def binder(original: Any) -> Any:
        """``(self, args, kwargs) -> {parameter: value}`` by ``original``'s signature (``{}`` when it
        cannot be bound), so the hooks read arguments by name whatever the positional layout."""
        try:
            signature: inspect.Signature | None = inspect.signature(original)
        except (TypeError, ValueError):
            signature = None

        def bind(self: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> dict[str, Any]:
            if signature is not None:
                with contextlib.suppress(TypeError):
                    return dict(signature.bind(self, *args, **kw).arguments)
            return {}

        return bind

    def pick(bound: dict[str, Any], args: tuple[Any, ...], names: tuple[str, ...], index: int) -> Any:
        for name in names:
            if name in bound:
                return bound[name]
        return args[index] if 0 <= index < len(args) else None

    def pointer(bound: dict[str, Any], args: tuple[Any, ...], index: int) -> Any:
        """The pointer operand: by name, else by position, else the first pointer-typed handle."""
        found = pick(bound, args, ("ptrs", "ptr", "pointer", "pointers"), index)
        if _is_pointer(found):
            return found
        candidates = list(args) + [v for v in bound.values() if v is not None]
        return next((value for value in candidates if _is_pointer(value)), found)

    def counting_memop(original: Any, slot: int, ptr_index: int, mask_index: int) -> Any:
        bind = binder(original)

        def memop(self: Any, *args: Any, **kw: Any) -> Any:
            def count() -> None:
                bound = bind(self, args, kw)
                ptrs = pointer(bound, args, ptr_index)
                mask = pick(bound, args, ("mask", "masks"), mask_index)
                lanes = _active_lanes(mask, _np_data(ptrs).shape)
                state.add(slot, lanes * _elem_bytes(ptrs))
                state.add(2, 1.0)

            counting(count)
            return original(self, *args, **kw)

        return memop

    def counting_load(original: Any) -> Any:
        # create_masked_load(ptrs, mask, other, cache..., is_volatile): 3.6 and 3.9 differ after `other`
        return counting_memop(original, 0, 0, 1)

    def counting_store(original: Any) -> Any:
        # create_masked_store(ptrs, value, mask, cache...)
        return counting_memop(original, 1, 0, 2)

    def counting_dot(original: Any) -> Any:
        bind = binder(original)

        def create_dot(self: Any, *args: Any, **kw: Any) -> Any:
            def count() -> None:
                bound = bind(self, args, kw)
                a, b = pick(bound, args, ("a", "lhs"), 0), pick(bound, args, ("b", "rhs"), 1)
                sa, sb = _np_data(a).shape, _np_data(b).shape
                if len(sa) >= 2 and len(sb) >= 2:
                    batch = math.prod(sa[:-2]) if len(sa) > 2 else 1
                    flops = 2.0 * batch * sa[-2] * sa[-1] * sb[-1]
                    wide = max(_elem_bytes(a), _elem_bytes(b)) >= 4
                    precision = pick(bound, args, ("input_precision",), 3)
                    name = str(getattr(precision, "name", precision) or "").upper()
                    if not wide:
                        state.add(3, flops)
                    elif "IEEE" in name:
                        state.add(7, flops)
                    else:  # tf32 (x3 passes for tf32x3)
                        state.add(4, flops * (3.0 if "X3" in name else 1.0))

            counting(count)
            return original(self, *args, **kw)

        return create_dot

    def counting_atomic(original: Any, ptr_index: int, mask_index: int | None) -> Any:
        bind = binder(original)

        def atomic(self: Any, *args: Any, **kw: Any) -> Any:
            def count() -> None:
                bound = bind(self, args, kw)
                ptr = pointer(bound, args, ptr_index)
                shape = _np_data(ptr).shape
                mask = None if mask_index is None else pick(bound, args, ("mask",), mask_index)
                lanes = _active_lanes(mask, shape)
                size = _elem_bytes(ptr)
                state.add(0, lanes * size)
                state.add(1, lanes * size)
                state.add(6, lanes)
                state.add(2, 1.0)

            counting(count)
            return original(self, *args, **kw)

        return atomic

    def counting_rmw(original: Any) -> Any:
        # create_atomic_rmw(rmwOp, ptr, val, mask, sem, scope)
        return counting_atomic(original, 1, 3)

    def counting_cas(original: Any) -> Any:
        # create_atomic_cas(ptr, cmp, val, sem, scope): no mask
        return counting_atomic(original, 0, None)

    def counting_elementwise(original: Any) -> Any:
        def op(self: Any, *args: Any, **kw: Any) -> Any:
            out = original(self, *args, **kw)
            counting(lambda: state.add(5, float(getattr(_np_data(out), "size", 1) or 1)))
            return out

        return op

    def counting_reduce(original: Any) -> Any:
        def apply(self: Any, *args: Any, **kw: Any) -> Any:
            def count() -> None:
                input = args[0] if args else kw.get("input")
                items = input if isinstance(input, tuple) else (input,)
                n = 0
                for item in items:
                    handle = getattr(item, "handle", None)
                    n += int(getattr(_np_data(handle), "size", 0) or 0) if handle is not None else 0
                state.add(5, float(n))

            counting(count)
            return original(self, *args, **kw)

        return apply

    def grid_dim(original: Any) -> Any:
        def set_grid_dim(self: Any, *args: Any, **kw: Any) -> Any:
            result = original(self, *args, **kw)
            executor = state.pending_executor
            if executor is not None and state.launch is not None:
                state.pending_executor = None
                raw = getattr(self, "grid_dim", None) or (*args, *kw.values())
                dims = ([_to_int(d) for d in raw] + [1, 1, 1])[:3]
                programs = math.prod(dims)
                state.launch.grid = dims
                state.launch.programs = programs
                ids = sample_program_ids(programs, state.max_programs)
                state.sample_set = None if ids is None else set(ids)
                executor.fn = _ProgramRunner(executor.fn, state)
            return result

        return set_grid_dim

    def executor_call(original: Any) -> Any:
        def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N807
            if state.suspended:
                return original(self, *args, **kwargs)
            fn = self.fn
            warps = kwargs.get("num_warps")
            try:
                arg_bytes = _tensor_arg_bytes(args, kwargs)
            except Exception:  # noqa: BLE001 - a count, never a reason to fail the launch
                arg_bytes = 0
            state.launch = LaunchCounters(
                kernel=str(getattr(fn, "__name__", "kernel")),
                num_warps=int(warps) if isinstance(warps, int) else None,
                arg_bytes=arg_bytes,
            )
            state.samples = []
            state.uncounted = 0
            state.pending_executor = self
            try:
                return original(self, *args, **kwargs)
            finally:
                if isinstance(self.fn, _ProgramRunner):
                    self.fn = self.fn.fn
                launch = state.launch
                state.launch = None
                state.pending_executor = None
                state.sample_set = None
                if launch is not None and launch.programs:
                    totals = extrapolate(state.samples, launch.programs)
                    for name, value in zip(_FIELDS, totals, strict=True):
                        setattr(launch, name, float(value))
                    launch.programs_run = len(state.samples)
                    launch.uncounted = state.uncounted
                    state.counters.launches.append(launch)
                state.samples = []
                state.uncounted = 0

        return __call__

    interpreted: dict[int, Any] = {}

    def interpretable_jit(original: Any) -> Any:
        # A process that imported triton without TRITON_INTERPRET has JITFunction objects for
        # triton.language's own @jit helpers (tl.sum, tl.cdiv, ...), which refuse to be called from
        # an interpreted kernel; run them through the interpreter instead, as interpret mode does.
        def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N807
            fn = interpreted.get(id(self))
            if fn is None:
                fn = interpreted[id(self)] = interp.InterpretedFunction(self.fn)
            return fn(*args, **kwargs)

        return __call__

    def suspending(original: Any) -> Any:
        def method(*args: Any, **kwargs: Any) -> Any:
            state.suspended += 1
            try:
                return original(*args, **kwargs)
            finally:
                state.suspended -= 1

        return method

    try:
        patch(builder_cls, "create_masked_load", counting_load)
        patch(builder_cls, "create_masked_store", counting_store)
        patch(builder_cls, "create_dot", counting_dot)
        patch(builder_cls, "create_atomic_rmw", counting_rmw)
        patch(builder_cls, "create_atomic_cas", counting_cas)
        for name in ("binary_op", "unary_op", "ternary_op"):
            patch(builder_cls, name, counting_elementwise)
        patch(builder_cls, "set_grid_dim", grid_dim)
        if hasattr(interp, "ReduceScanOpInterface"):
            patch(interp.ReduceScanOpInterface, "apply", counting_reduce)
        patch(interp.GridExecutor, "__call__", executor_call)
        patch(interp, "_patch_lang_tensor", wrap_patch_lang_tensor)  # NumPy >= 2.4 on triton <= 3.6
        try:
            from triton.runtime.jit import JITFunction

            patch(JITFunction, "__call__", interpretable_jit)
        except ImportError:  # pragma: no cover
            pass
        try:
            from triton.runtime.autotuner import Autotuner

            if hasattr(Autotuner, "_bench"):
                patch(Autotuner, "_bench", suspending)
        except ImportError:  # pragma: no cover
            pass
        _ACTIVE = state
        yield state.counters
    finally:
        _ACTIVE = None
        for owner, name, original in reversed(saved):
            if original is None:
                with contextlib.suppress(AttributeError):
                    delattr(owner, name)
            else:
                setattr(owner, name, original)


def _interpreter_active() -> bool:
    try:
        from triton import knobs

        return bool(knobs.runtime.interpret)
    except (ImportError, AttributeError):
        return os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "on", "yes")


# ----------------------------------------------------------------------------- reference / roofline


_NO_KERNEL_OPS = frozenset(
    {
        "empty",
        "empty_like",
        "empty_strided",
        "detach",
        "lift_fresh",
        "lift_fresh_copy",
        "alias",
        "_local_scalar_dense",
        "set_",
        "resize_",
        "sym_size",
        "sym_stride",
        "sym_numel",
        "is_same_size",
    }
)


def _flat_tensors(value: Any) -> list[Any]:
    import torch

    out: list[Any] = []

    def visit(v: Any) -> None:
        if isinstance(v, torch.Tensor):
            out.append(v)
        elif isinstance(v, (tuple, list)):
            for item in v:
                visit(item)
        elif isinstance(v, dict):
            for item in v.values():
                visit(item)

    visit(value)
    return out


def _nbytes(t: Any) -> int:
    return int(t.numel()) * int(t.element_size())


def reference_costs(model: Any, inputs: list[Any]) -> dict[str, Any]:
    """Run ``model(*inputs)`` once and record, per ATen operator that launches a kernel, the bytes
    it reads and writes and its FLOPs (matmul family, via ``torch.utils.flop_counter``).

    Returns:
        ``{"ops": [[name, bytes, flops, wide], ...], "min_bytes", "min_flops_16", "min_flops_32",
        "outputs_bytes"}`` where ``wide`` marks fp32 (or wider) operands.
    """
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    try:
        from torch.utils.flop_counter import flop_registry
    except ImportError:  # pragma: no cover
        flop_registry = {}
    ops: list[list[Any]] = []

    class _Counter(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            packet = getattr(func, "overloadpacket", None)
            name = getattr(packet, "__name__", str(func))
            if name in _NO_KERNEL_OPS:
                return out
            schema = getattr(func, "_schema", None)
            returns = getattr(schema, "returns", []) if schema is not None else []
            if returns and all(r.alias_info is not None and not r.alias_info.is_write for r in returns):
                return out  # a view: no data moves
            ins = _flat_tensors((args, kwargs))
            outs = _flat_tensors(out)
            if not ins and not outs:
                return out
            moved = sum(_nbytes(t) for t in ins) + sum(_nbytes(t) for t in outs)
            flops = 0.0
            counter = flop_registry.get(packet) if packet is not None else None
            if counter is not None:
                try:
                    flops = float(counter(*args, **kwargs, out_val=out))
                except Exception:  # noqa: BLE001 - an unexpected signature: count no FLOPs
                    flops = 0.0
            wide = any(t.is_floating_point() and t.element_size() >= 4 for t in ins)
            ops.append([f"aten.{name}", moved, flops, wide])
            return out

    with torch.no_grad(), _Counter():
        outputs = model(*inputs)
    inputs_bytes = sum(_nbytes(t) for t in _flat_tensors(inputs))
    outputs_bytes = sum(_nbytes(t) for t in _flat_tensors(outputs))
    return {
        "ops": ops,
        "min_bytes": int(inputs_bytes + outputs_bytes),
        "outputs_bytes": int(outputs_bytes),
        "min_flops_16": float(sum(o[2] for o in ops if not o[3])),
        "min_flops_32": float(sum(o[2] for o in ops if o[3])),
    }


def task_roofline(
    reference: Any, inputs: list[Any], task_id: str | None = None, on_meta: bool = True
) -> dict[str, Any]:
    """The roofline floor of a task and the reference's per-operator costs.

    The floor's bytes are the inputs read once plus the outputs written once; its FLOPs are the
    reference's matmul-family FLOPs (``torch.utils.flop_counter``; elementwise FLOPs are not
    counted). With ``on_meta`` the reference runs on ``meta`` copies (shapes only, no compute),
    falling back to the real tensors when an operator has no meta kernel.

    Args:
        reference: the task's ``Model`` instance.
        inputs: its inputs (``get_inputs()``).
        task_id: recorded in the result.
        on_meta: try a shape-only run first.
    """
    import copy

    import torch

    costs = None
    if on_meta:
        try:
            meta_model = copy.deepcopy(reference).to("meta") if isinstance(reference, torch.nn.Module) else reference
            meta_inputs = [x.to("meta") if isinstance(x, torch.Tensor) else x for x in inputs]
            costs = reference_costs(meta_model, meta_inputs)
        except Exception:  # noqa: BLE001 - some operators have no meta kernel
            costs = None
    if costs is None:
        costs = reference_costs(reference, inputs)
    costs["task_id"] = task_id
    costs["source"] = "reference forward (aten operators)"
    return costs


# ----------------------------------------------------------------------------- estimate


def _launch_time(launch: LaunchCounters, chip: ChipProfile) -> dict[str, Any]:
    """Estimated microseconds of one launch on ``chip``.

    Programs run in waves of ``S = cores x resident programs`` (cores = cube cores for launches
    with dots and vector cores otherwise on Ascend; SMs on a GPU). A wave of ``q`` programs uses
    ``c = min(q, cores)`` cores with ``k = min(ceil(q / cores), resident) x tiles_in_flight``
    memory tiles in flight per core, and takes::

        mem  = q * B / (c * min(BWcore, k * tile / (latency + tile / BWcore)))   BWcore = BW / cores
        dot  = q * (F16 / peak + F32 / (peak * dot_fp32_rate) + Fieee / (peak * dot_fp32_ieee_rate)) / (c / cores)
        vec  = q * V / (peak_vector * c / cores)
        wave = max(mem, dot, vec) + round_overhead

    where ``B, F16, F32, Fieee, V`` are per-program means (Fieee: fp32 dots with
    ``input_precision='ieee'``) and ``tile = bytes / memops``; bytes that
    re-read data already read in the launch (``bytes - arg_bytes``) count at HBM/L2 cost ratio.
    The launch takes ``launch_overhead + sum(waves)``.
    """
    programs = max(1, int(launch.programs))
    uses_dot = launch.dot_flops > 0
    cores = chip.physical_cores(uses_dot)
    resident = chip.resident_programs_per_core(launch.num_warps)
    slots = cores * resident
    rounds = math.ceil(programs / slots)
    bw = chip.hbm_bandwidth_gbps * 1e3  # bytes per microsecond
    bw_core = bw / cores
    l2 = (chip.l2_bandwidth_gbps or chip.hbm_bandwidth_gbps) * 1e3
    moved = launch.bytes_moved
    rereads = max(0.0, moved - float(launch.arg_bytes)) if launch.arg_bytes else 0.0
    hbm_equiv = (moved - rereads) + rereads * (bw / l2)
    per_prog_bytes = hbm_equiv / programs
    tile = moved / launch.memops if launch.memops else 0.0
    peak = chip.peak_dot_tflops * 1e6  # flop per microsecond
    ieee_rate = chip.dot_fp32_ieee_rate or chip.dot_fp32_rate
    per_prog_dot_us = (
        launch.dot_flops_16 / peak
        + launch.dot_flops_32 / (peak * chip.dot_fp32_rate)
        + launch.dot_flops_ieee / (peak * ieee_rate)
    ) / programs
    per_prog_vec_us = launch.vector_ops / (chip.peak_vector_tflops * 1e6) / programs

    def wave(q: int) -> tuple[float, float, float]:
        used = min(q, cores)
        per_core_programs = min(resident, math.ceil(q / cores))
        in_flight = per_core_programs * chip.tiles_in_flight_per_program
        if tile > 0:
            per_core_bw = min(bw_core, in_flight * tile / (chip.mem_latency_us + tile / bw_core))
        else:
            per_core_bw = bw_core
        mem = q * per_prog_bytes / (used * per_core_bw) if per_prog_bytes else 0.0
        share = used / cores
        return mem, q * per_prog_dot_us / share, q * per_prog_vec_us / share

    full_waves, last = divmod(programs, slots)
    parts = {"mem": 0.0, "dot": 0.0, "vec": 0.0}
    work = 0.0
    for q, count in ((slots, full_waves), (last, 1 if last else 0)):
        if not count:
            continue
        mem, dot, vec = wave(q)
        parts["mem"] += count * mem
        parts["dot"] += count * dot
        parts["vec"] += count * vec
        work += count * max(mem, dot, vec)
    overhead = chip.launch_overhead_us + rounds * chip.round_overhead_us
    total = overhead + work
    bound = max(parts, key=lambda k: parts[k]) if work > 0 else "overhead"
    if overhead > work:
        bound = "overhead"
    return {
        "kernel": launch.kernel,
        "programs": programs,
        "programs_run": launch.programs_run,
        "sampled": launch.sampled,
        "slots": slots,
        "rounds": rounds,
        "bytes": moved,
        "dot_flops": launch.dot_flops,
        "vector_ops": launch.vector_ops,
        "est_us": total,
        "overhead_us": overhead,
        "mem_us": parts["mem"],
        "dot_us": parts["dot"],
        "vec_us": parts["vec"],
        "bound": {"mem": "memory", "dot": "dot (cube / tensor cores)", "vec": "vector ops"}.get(bound, bound),
    }


def _roofline_ms(roofline: dict[str, Any] | None, chip: ChipProfile) -> float | None:
    if not roofline or not isinstance(roofline.get("min_bytes"), (int, float)):
        return None
    mem = float(roofline["min_bytes"]) / (chip.hbm_bandwidth_gbps * 1e9)
    peak = chip.peak_dot_tflops * 1e12
    f16 = float(roofline.get("min_flops_16") or 0.0)
    f32 = float(roofline.get("min_flops_32") or 0.0)
    if "min_flops" in roofline and not (f16 or f32):
        f32 = float(roofline.get("min_flops") or 0.0)
    compute = f16 / peak + f32 / (peak * chip.dot_fp32_rate)
    return max(mem, compute) * 1e3


def _reference_ms(roofline: dict[str, Any] | None, chip: ChipProfile) -> float | None:
    ops = (roofline or {}).get("ops")
    if not ops:
        return None
    bw = chip.hbm_bandwidth_gbps * 1e9
    peak = chip.peak_dot_tflops * 1e12
    total_s = 0.0
    for _name, moved, flops, wide in ops:
        # eager PyTorch runs fp32 matmuls in full fp32 by default (no TF32)
        rate = peak * ((chip.dot_fp32_ieee_rate or chip.dot_fp32_rate) if wide else 1.0)
        overhead_s = (chip.launch_overhead_us + chip.round_overhead_us + chip.mem_latency_us) * 1e-6
        total_s += overhead_s + max(float(moved) / bw, float(flops) / rate)
    return total_s * 1e3


def estimate(
    counters: KernelCounters | dict[str, Any],
    roofline: dict[str, Any] | None = None,
    chip: str | ChipProfile = "910B3",
) -> dict[str, Any]:
    """Estimated time of the counted launches on ``chip``, with the roofline floor.

    Args:
        counters: from :func:`instrument` (or its ``to_dict()``).
        roofline: from :func:`task_roofline` (``min_bytes``, ``min_flops_16`` / ``min_flops_32``,
            ``ops``); a dict with only ``min_bytes`` works (no FLOP floor, no ``est_speedup``).
        chip: profile name, JSON path or :class:`ChipProfile`.

    Returns:
        A JSON-serialisable dict: ``label`` (always ``"estimate"``), ``chip``, ``est_ms``,
        ``roofline_ms``, ``est_roofline_fraction`` (roofline / estimate, clipped to [0, 1]),
        ``reference_est_ms`` and ``est_speedup`` (idealised eager PyTorch reference estimate /
        candidate estimate; ``None`` without the reference's operators), ``bound``, ``programs``,
        ``rounds``, ``bytes``, ``dot_flops``, ``vector_ops``, ``sampled``, ``uncounted`` (interpreter
        operations that could not be counted: the counts are then lower bounds), ``launches`` (per
        launch) and ``assumptions``.
    """
    if isinstance(counters, dict):
        counters = KernelCounters.from_dict(counters)
    if not isinstance(counters, KernelCounters):
        raise TypeError(f"counters must be KernelCounters or its dict, got {type(counters).__name__}")
    profile = resolve_chip(chip)
    per_launch = [_launch_time(launch, profile) for launch in counters.launches]
    est_us = sum(item["est_us"] for item in per_launch)
    est_ms = est_us / 1e3 if per_launch else None
    roof_ms = _roofline_ms(roofline, profile)
    ref_ms = _reference_ms(roofline, profile)
    fraction = None
    if roof_ms is not None and est_ms:
        fraction = max(0.0, min(1.0, roof_ms / est_ms))
    speedup = ref_ms / est_ms if (ref_ms is not None and est_ms) else None
    totals = {"mem": 0.0, "dot": 0.0, "vec": 0.0, "overhead": 0.0}
    for item in per_launch:
        totals["mem"] += item["mem_us"]
        totals["dot"] += item["dot_us"]
        totals["vec"] += item["vec_us"]
        totals["overhead"] += item["overhead_us"]
    bound = max(totals, key=lambda k: totals[k]) if per_launch else None
    assumptions = [
        "estimate from counted interpreter work, not a measurement",
        "programs run in rounds over the parallel cores (vector cores, or cube cores for kernels with tl.dot)",
        "memory, dot and vector work of a round overlap (time = the largest) plus a fixed per-round overhead",
        "elementwise ops counted one per element (index and mask arithmetic included)",
        *profile.assumptions(),
    ]
    if roofline is None:
        assumptions.append("no task roofline given: roofline_ms and est_roofline_fraction are None")
    elif "min_flops_16" not in roofline and "min_flops" not in roofline:
        assumptions.append("roofline without FLOPs: the floor counts bytes only")
    if ref_ms is not None:
        assumptions.append(
            "est_speedup compares with an idealised eager PyTorch reference: each ATen operator at its own "
            "roofline plus one launch overhead, one round overhead and one memory latency"
        )
    if any(launch.sampled for launch in counters.launches):
        assumptions.append("large grids were sampled: counts extrapolated from evenly spaced programs")
    uncounted = int(sum(launch.uncounted for launch in counters.launches))
    if uncounted:
        assumptions.append(
            f"{uncounted} interpreter operations could not be counted (unsupported triton internals): "
            "bytes, FLOPs and element ops are lower bounds"
        )
    return {
        "label": LABEL,
        "chip": profile.name,
        "est_ms": _round(est_ms),
        "roofline_ms": _round(roof_ms),
        "est_roofline_fraction": _round(fraction),
        "reference_est_ms": _round(ref_ms),
        "est_speedup": _round(speedup),
        "bound": {"mem": "memory", "dot": "dot", "vec": "vector", "overhead": "overheads"}.get(bound or "", None),
        "launches_count": len(per_launch),
        "programs": counters.programs,
        "rounds": int(sum(item["rounds"] for item in per_launch)),
        "bytes": float(counters.bytes_moved),
        "dot_flops": float(counters.dot_flops),
        "vector_ops": float(counters.total("vector_ops")),
        "sampled": any(launch.sampled for launch in counters.launches),
        "uncounted": uncounted,
        "launches": [{k: (_round(v) if isinstance(v, float) else v) for k, v in item.items()} for item in per_launch],
        "assumptions": assumptions,
    }


def _round(value: float | None, digits: int = 6) -> float | None:
    if value is None:
        return None
    if value == 0 or not math.isfinite(value):
        return float(value)
    return float(f"{value:.{digits}g}")


# ----------------------------------------------------------------------------- separate process


def estimate_kernel(
    task: Any,
    code: str,
    profile: str = "full",
    chip: str | ChipProfile = "910B3",
    *,
    max_programs: int | None = 64,
    roofline: bool = True,
    seed: int = 0,
    timeout_s: float = 900.0,
    threads: int = 1,
) -> dict[str, Any]:
    """Estimate ``code``'s time for ``task`` at ``profile``'s shapes in a fresh interpreter process.

    The child process sets ``TRITON_INTERPRET=1`` before importing triton and hides GPUs, so this
    works from a CUDA or NPU process. It runs the candidate's host code and kernels unsandboxed:
    use it for trusted code (reference solutions, your own variants), not for untrusted output.

    Args:
        task: a :class:`~ascend_kernel_gym.tasks.task.Task`.
        code: the candidate source (defines ``ModelNew``).
        profile: shape profile (``full`` for device sizes).
        chip: chip profile for the estimate.
        max_programs: programs run per launch before sampling (see :func:`sample_program_ids`);
            ``None`` runs every program.
        roofline: also compute :func:`task_roofline` (needed for the fraction and ``est_speedup``).
        seed: input seed.
        timeout_s: wall-clock limit of the child.
        threads: torch threads in the child.

    Returns:
        :func:`estimate`'s dict plus ``counters`` (raw per-launch counts), ``profile`` and
        ``seconds`` (wall time of the interpreter pass); on a failure
        ``{"label": "estimate", "chip": ..., "error": "..."}``.
    """
    return estimate_variants(
        task,
        [code],
        profile,
        chip,
        max_programs=max_programs,
        roofline=roofline,
        seed=seed,
        timeout_s=timeout_s,
        threads=threads,
    )[0]


def estimate_variants(
    task: Any,
    codes: list[str],
    profile: str = "full",
    chip: str | ChipProfile = "910B3",
    *,
    max_programs: int | None = 64,
    roofline: bool = True,
    seed: int = 0,
    timeout_s: float = 900.0,
    threads: int = 1,
) -> list[dict[str, Any]]:
    """:func:`estimate_kernel` for several candidates of one task in one child process (the
    imports, the inputs and the roofline are paid once). One dict per code, in order; a failing
    candidate gets an ``error`` entry and does not stop the others."""
    if not isinstance(codes, list) or not all(isinstance(c, str) for c in codes):
        raise TypeError("codes must be a list of source strings")
    profile_obj = resolve_chip(chip)
    payload = {
        "task": task,
        "codes": codes,
        "profile": profile,
        "chip": profile_obj,
        "max_programs": max_programs,
        "roofline": roofline,
        "seed": seed,
        "threads": threads,
    }
    env = dict(os.environ)
    env["TRITON_INTERPRET"] = "1"
    env["CUDA_VISIBLE_DEVICES"] = ""
    env["ASCEND_RT_VISIBLE_DEVICES"] = ""
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[var] = str(max(1, threads))

    def failure(message: str) -> list[dict[str, Any]]:
        return [{"label": LABEL, "chip": profile_obj.name, "error": message} for _ in codes]

    try:
        proc = subprocess.run(
            [sys.executable, "-m", "ascend_kernel_gym.ascend.cost_model"],
            input=pickle.dumps(payload),
            capture_output=True,
            timeout=timeout_s,
            env=env,
            cwd=root,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return failure(f"timed out after {timeout_s:g} s")
    stdout = proc.stdout.decode("utf-8", errors="replace")
    for line in reversed(stdout.splitlines()):
        if line.startswith(_RESULT_MARK):
            results = json.loads(line[len(_RESULT_MARK) :])
            if isinstance(results, list) and len(results) == len(codes):
                return results
            if isinstance(results, dict) and "error" in results:
                return failure(str(results["error"]))
    tail = proc.stderr.decode("utf-8", errors="replace")[-2000:]
    return failure(f"child exited with {proc.returncode}: {tail}")


def _child_main() -> None:  # pragma: no cover - exercised through estimate_kernel in tests
    payload = pickle.loads(sys.stdin.buffer.read())  # noqa: S301 - written by estimate_variants, same user
    try:
        result: Any = _run_estimates(payload)
    except BaseException as exc:  # noqa: BLE001 - report, never hang
        import traceback

        result = {"label": LABEL, "error": f"{type(exc).__name__}: {exc}\n{traceback.format_exc()[-1500:]}"}
    sys.stdout.write(_RESULT_MARK + json.dumps(result, default=str) + "\n")
    sys.stdout.flush()


def _run_estimates(payload: dict[str, Any]) -> list[dict[str, Any]]:
    import time
    import traceback

    import torch

    from ascend_kernel_gym.tasks.runtime import instantiate

    torch.set_num_threads(max(1, int(payload.get("threads") or 1)))
    task = payload["task"]
    seed = int(payload.get("seed") or 0)
    tm = instantiate(task, payload["profile"])
    torch.manual_seed(seed)
    init = tm.get_init_inputs()
    reference = tm.Model(*init)
    torch.manual_seed(seed + 1)
    inputs = tm.get_inputs()
    roof = task_roofline(reference, inputs, task.id) if payload.get("roofline") else None
    chip = payload["chip"]
    results = []
    for code in payload["codes"]:
        start = time.perf_counter()
        try:
            torch.manual_seed(seed + 2)
            result = estimate_in_process(
                code, init, inputs, chip, reference=reference, roofline=roof, max_programs=payload.get("max_programs")
            )
        except Exception as exc:  # noqa: BLE001 - one failing candidate does not stop the others
            result = {
                "label": LABEL,
                "chip": getattr(chip, "name", None),
                "error": f"{type(exc).__name__}: {exc}\n{traceback.format_exc()[-1200:]}",
            }
        result["profile"] = payload["profile"]
        result["seconds"] = round(time.perf_counter() - start, 3)
        results.append(result)
    return results


def estimate_in_process(
    code: str,
    init_inputs: list[Any],
    inputs: list[Any],
    chip: str | ChipProfile = "910B3",
    *,
    reference: Any = None,
    roofline: dict[str, Any] | None = None,
    max_programs: int | None = 64,
    filename: str | None = None,
) -> dict[str, Any]:
    """Estimate a candidate in this process by re-executing its source under Triton's interpreter.

    For evaluator children on CUDA / NPU (the candidate's compiled kernels are left alone): the
    source is executed again as a fresh module with ``TRITON_INTERPRET=1`` set while its
    ``@triton.jit`` decorators run (Triton reads the variable when decorating), ``ModelNew`` is
    built from ``init_inputs`` (parameters copied from ``reference`` where names and shapes
    match) and called once on CPU copies of ``inputs`` inside :func:`instrument`. Needs a Triton
    whose ``jit`` honours the variable at decoration time (checked: triton 3.6 and 3.9).

    Args:
        code: the candidate source.
        init_inputs: ``get_init_inputs()`` of the task.
        inputs: one set of ``get_inputs()`` (any device; copied to the CPU).
        chip: chip profile of the estimate.
        reference: the task's model, for parameters and (without ``roofline``) the roofline.
        roofline: a precomputed :func:`task_roofline` (else computed from ``reference`` if given).
        max_programs: programs run per launch before sampling.
        filename: execute from this file (default: a temporary copy of ``code``).

    Returns:
        :func:`estimate`'s dict plus ``counters`` (and ``min_bytes`` / ``min_flops`` with a roofline).
    """
    import torch

    from ascend_kernel_gym.ascend.checks import _exec_candidate
    from ascend_kernel_gym.tasks.runtime import exec_source

    def to_cpu(value: Any) -> Any:
        return value.detach().to("cpu").clone() if isinstance(value, torch.Tensor) else value

    cpu_inputs = [to_cpu(x) for x in inputs]
    cpu_init = [to_cpu(x) for x in init_inputs]
    previous = os.environ.get("TRITON_INTERPRET")
    os.environ["TRITON_INTERPRET"] = "1"
    try:
        if filename is not None:
            import uuid

            module = exec_source(code, f"akg_interp_{uuid.uuid4().hex[:12]}", filename)
            sys.modules[module.__name__] = module
        else:
            module = _exec_candidate(code, exec_source)
        candidate = module.ModelNew(*cpu_init)
        ref_cpu = None
        if reference is not None:
            import copy

            ref_cpu = copy.deepcopy(reference).to("cpu") if isinstance(reference, torch.nn.Module) else reference
            if isinstance(candidate, torch.nn.Module):
                candidate = candidate.to("cpu")
            _copy_parameters(ref_cpu, candidate)
        if roofline is None and ref_cpu is not None:
            roofline = task_roofline(ref_cpu, cpu_inputs)
        with torch.no_grad(), instrument(max_programs) as counters:
            candidate(*cpu_inputs)
    finally:
        if previous is None:
            os.environ.pop("TRITON_INTERPRET", None)
        else:
            os.environ["TRITON_INTERPRET"] = previous
    result = estimate(counters, roofline, chip)
    result["counters"] = counters.to_dict()
    if roofline is not None and "min_flops_16" in roofline:
        result["min_bytes"] = roofline["min_bytes"]
        result["min_flops"] = roofline["min_flops_16"] + roofline.get("min_flops_32", 0.0)
    return result


def _copy_parameters(reference: Any, candidate: Any) -> None:
    import torch

    if isinstance(reference, torch.nn.Module) and isinstance(candidate, torch.nn.Module):
        state = reference.state_dict()
        mine = candidate.state_dict()
        matching = {k: v for k, v in state.items() if k in mine and tuple(mine[k].shape) == tuple(v.shape)}
        if matching:
            with torch.no_grad():
                candidate.load_state_dict(matching, strict=False)


if __name__ == "__main__":  # pragma: no cover
    _child_main()
