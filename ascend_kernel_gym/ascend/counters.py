"""Counting what interpreted Triton kernels do: :func:`instrument` and its per-launch counters.

While the context is open, Triton's interpreter is patched to count, per launch and per program,

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

Imports triton and NumPy only inside functions.
"""

from __future__ import annotations

import contextlib
import inspect
import math
import operator
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from ascend_kernel_gym.backends.interpreter_compat import scalar, wrap_patch_lang_tensor

__all__ = [
    "KernelCounters",
    "LaunchCounters",
    "extrapolate",
    "instrument",
    "sample_program_ids",
    "to_int",
]


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


def to_int(value: Any) -> int:
    """``int(value)`` for Python ints, NumPy scalars / 0-d / 1-element arrays, interpreter
    ``TensorHandle`` / ``tl.tensor`` scalars and anything with ``__index__``."""
    if isinstance(value, int):
        return int(value)
    with contextlib.suppress(TypeError):
        return operator.index(value)
    handle = getattr(value, "handle", None)  # a tl.tensor
    return int(scalar(_np_data(value if handle is None else handle)))


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
        x, y, z = (to_int(i) for i in interpreter_builder.grid_idx)
        _, ny, nz = (to_int(d) for d in interpreter_builder.grid_dim)
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
                dims = ([to_int(d) for d in raw] + [1, 1, 1])[:3]
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
