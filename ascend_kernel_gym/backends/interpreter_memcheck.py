"""A memory-safe Triton CPU interpreter: every load, store and atomic is checked before it happens.

With ``TRITON_INTERPRET=1`` a kernel runs on CPU tensors and its pointers are raw addresses of
the process: pointer arithmetic, or an integer argument holding ``id(obj)`` or another object's
``data_ptr()``, reaches any byte of it. :func:`install` confines every interpreted memory access
to the storages of the tensors passed to the launch that makes it.

Where the check sits. The interpreter touches memory only through four functions of its native
module (``triton._C.libtriton.interpreter``): ``load``, ``store``, ``atomic_rmw`` and
``atomic_cas``. Every builder path ends there: masked and unmasked loads and stores, scalar
pointers, ``atomic_load`` / ``atomic_store`` / ``atomic_poll``, tensor-descriptor loads, stores,
gathers and scatters, and, on releases that still have them, block pointers. :func:`install`
replaces that module, wherever Triton and ``sys.modules`` hold it, by a copy whose four memory
functions check the active lanes first and then call the native ones with private copies of the
checked arrays (another thread cannot change an address between the check and the access).
``GridExecutor`` is wrapped so that each launch knows its arguments: the allowed byte ranges are
``[storage.data_ptr(), + storage.nbytes())`` of every tensor argument, looked into tuples, named
tuples, ``TensorDescriptor.base`` and ``triton.reinterpret`` wrappers, read through PyTorch's own
C methods with ``__torch_function__`` disabled (a tensor subclass cannot lie about its storage).
A storage that is resized or freed during the launch is noticed at the next access.

Stock Triton also copies every global of its interpreter module (NumPy, the native module, the
builder) into the namespace of each module whose kernel it rewrites, so a kernel body could build
a NumPy view over any address (``np.lib.stride_tricks.as_strided``) without a load or store;
:func:`install` removes those names again, keeping the few the rewritten code refers to.

Masked-off lanes are never checked (their addresses may be garbage). An access outside raises
:class:`OutOfBoundsAccess` before any byte is read or written, and is also kept in the
process-wide record read by :func:`state`, so a candidate that catches the exception is still
seen. The interpreter wraps kernel exceptions in ``InterpreterError``; :func:`find_out_of_bounds`
digs the original out of an exception chain.

What this does not stop: Python code running in the same process (the kernel body is Python on
the interpreter) can reach the native module through introspection, build tensors over foreign
memory, or switch the check off. Those are Python-level capabilities, refused by the static
stage and bounded by the OS sandbox and the out-of-process judge, not by this module.

Imports NumPy at module level; :func:`install` imports torch and triton.
"""

from __future__ import annotations

import bisect
import sys
import threading
import types
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

#: access kinds named in :class:`OutOfBoundsAccess`
READ = "read"
WRITE = "write"
ATOMIC = "atomic"
#: the argument named when the launch has no tensor argument
NO_ARGUMENT = "no argument"
#: the kernel named for an access made outside any launch (a jitted function called directly)
NO_LAUNCH = "<no kernel launch>"
#: violations kept in :func:`state` (later ones are only counted)
MAX_RECORDED = 64

_MARK = "_akg_memcheck"
_NATIVE_NAME = "triton._C.libtriton.interpreter"
#: the interpreter's globals that rewritten kernels use (the AST rewrite refers to the first two)
_KEEP_INJECTED = frozenset({"interpreter_semantic", "_InterpreterComparison", "tl", "triton"})
#: how deep tensors are looked for in nested tuples (Triton's own limit is far lower in practice)
_MAX_DEPTH = 16


class OutOfBoundsAccess(Exception):  # noqa: N818 - the name the evaluator and issue 21 use
    """An interpreted kernel tried to touch memory outside its launch's tensor storages.

    Raised before the access happens.

    Attributes:
        kernel: the launched kernel's name (``NO_LAUNCH`` outside any launch).
        kind: ``"read"``, ``"write"`` or ``"atomic"``.
        argument: the argument whose storage is nearest the first bad address, or ``"no argument"``.
        offset: bytes from that argument's data pointer to the first bad address (may be negative);
            ``None`` with no argument.
        count: how many active lanes of this access were outside.
        address: the first bad address.
        window: the argument's storage as bytes relative to its data pointer, ``[lo, hi)``.
    """

    def __init__(
        self,
        kernel: str,
        kind: str,
        argument: str,
        offset: int | None,
        count: int,
        address: int,
        window: tuple[int, int] | None = None,
    ) -> None:
        self.kernel = kernel
        self.kind = kind
        self.argument = argument
        self.offset = offset
        self.count = count
        self.address = address
        self.window = window
        super().__init__(self.describe())

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            type(self),
            (self.kernel, self.kind, self.argument, self.offset, self.count, self.address, self.window),
        )

    @property
    def writes(self) -> bool:
        """Whether the access would have changed memory (a write or an atomic)."""
        return self.kind != READ

    def describe(self) -> str:
        """One line for feedback: kernel, kind, argument, offset."""
        lanes = f"{self.count} address{'es' if self.count != 1 else ''}"
        where = "outside any kernel launch" if self.kernel == NO_LAUNCH else f"kernel '{self.kernel}'"
        head = f"{where}: out-of-bounds {self.kind} ({lanes} outside the tensor arguments' memory)"
        if self.kernel == NO_LAUNCH:
            return f"{head}; no memory is allowed outside a launch"
        if self.offset is None:
            return f"{head}; the launch has no tensor argument"
        span = f"; its storage spans bytes [{self.window[0]}, {self.window[1]})" if self.window else ""
        return f"{head}; the first is at byte offset {self.offset} from argument '{self.argument}'{span}"

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready fields."""
        return {
            "kernel": self.kernel,
            "kind": self.kind,
            "argument": self.argument,
            "offset": self.offset,
            "count": self.count,
            "address": self.address,
            "window": list(self.window) if self.window else None,
            "writes": self.writes,
            "message": self.describe(),
        }


@dataclass(frozen=True)
class StorageSpan:
    """The memory one tensor argument gives a launch.

    Attributes:
        argument: the argument's name (``x``, ``pair[1]``, ``desc.base``).
        start: the storage's first byte address.
        nbytes: the storage's size in bytes.
        base: the argument's own data pointer (what the kernel receives).
    """

    argument: str
    start: int
    nbytes: int
    base: int

    @property
    def end(self) -> int:
        return self.start + self.nbytes


class AllowedRanges:
    """Sorted, merged byte ranges of a launch, and the vectorised containment check."""

    def __init__(self, spans: Iterable[StorageSpan]) -> None:
        self.spans = tuple(s for s in spans if s.nbytes > 0 and s.start > 0)
        merged: list[list[int]] = []
        for start, end in sorted((s.start, s.end) for s in self.spans):
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        self.starts = [m[0] for m in merged]
        self.ends = [m[1] for m in merged]
        self._starts = np.array(self.starts, dtype=np.uint64)
        self._limits: dict[int, np.ndarray] = {}

    def holds_block(self, lowest: int, highest: int, itemsize: int) -> bool:
        """Whether every address in ``[lowest, highest]`` (each ``itemsize`` bytes) lies in one range."""
        i = bisect.bisect_right(self.starts, lowest) - 1
        return i >= 0 and highest + itemsize <= self.ends[i]

    def outside(self, addresses: np.ndarray, itemsize: int) -> np.ndarray:
        """A boolean array: which ``uint64`` addresses' ``itemsize``-byte accesses leave every range."""
        if not self.starts:
            return np.ones(addresses.shape, dtype=bool)
        limits = self._limits.get(itemsize)
        if limits is None:
            # the last start address of an item in each range; below the range when it cannot hold one
            limits = np.array(
                [max(e - itemsize, s - 1) for s, e in zip(self.starts, self.ends, strict=True)], dtype=np.uint64
            )
            self._limits[itemsize] = limits
        index = np.searchsorted(self._starts, addresses, side="right").astype(np.intp) - 1
        below = index < 0
        index[below] = 0
        # compared as "start <= limit" rather than "start + itemsize <= end": no uint64 wrap-around
        return below | (addresses > limits[index])

    def nearest(self, address: int) -> StorageSpan | None:
        """The span closest to ``address`` (the first of equals), or ``None`` without spans."""
        best: StorageSpan | None = None
        best_distance = -1
        for span in self.spans:
            distance = span.start - address if address < span.start else max(0, address - span.end + 1)
            if best is None or distance < best_distance:
                best, best_distance = span, distance
        return best


@dataclass(frozen=True)
class MemcheckState:
    """What the check has seen in this process (see :func:`state`).

    Attributes:
        installed: whether the check is active now.
        launches: interpreted launches entered since the last :func:`reset`.
        checks: memory accesses checked since the last :func:`reset`.
        violations: the first ``MAX_RECORDED`` out-of-bounds attempts, caught or not.
        dropped: further attempts, counted only.
    """

    installed: bool
    launches: int
    checks: int
    violations: tuple[OutOfBoundsAccess, ...]
    dropped: int

    @property
    def wrote(self) -> bool:
        """Whether any recorded attempt was a write or an atomic."""
        return any(v.writes for v in self.violations)


class _Unset:
    """Stands for a class before :func:`install` looks the real one up (matches nothing)."""


class _Torch:
    """PyTorch's C methods, taken once at install (a later monkey-patch of torch's Python classes
    does not change what the check reads)."""

    tensor: type = _Unset
    storage_of: Any = None
    tensor_data_ptr: Any = None
    storage_data_ptr: Any = None
    storage_nbytes: Any = None
    no_torch_function: Any = None
    wrapper: type = _Unset
    descriptor: type = _Unset


class _Counts:
    active = False
    launches = 0
    checks = 0
    dropped = 0
    violations: list[OutOfBoundsAccess] = []  # noqa: RUF012 - process-wide record, replaced by reset()


_TLS = threading.local()
_NO_ADDRESS = np.uint64(2**64 - 1)
_NOTHING = AllowedRanges(())
_INSTALL_LOCK = threading.Lock()
_NATIVE: Any = None


class _Launch:
    """One interpreted launch: its kernel name and the storages of its tensor arguments."""

    __slots__ = ("bound", "entries", "executor", "kernel", "ranges")

    def __init__(self, kernel: str, executor: Any) -> None:
        self.kernel = kernel
        self.executor = executor
        self.bound = False
        # (argument name, storage object, storage start, nbytes, data pointer - storage start)
        self.entries: tuple[tuple[str, Any, int, int, int], ...] = ()
        self.ranges = AllowedRanges(())

    def bind(self, named_values: Iterable[tuple[str, Any]]) -> None:
        entries = []
        with _Torch.no_torch_function():
            for name, tensor in _named_tensors(named_values):
                try:
                    storage = _Torch.storage_of(tensor)
                    start = _Torch.storage_data_ptr(storage)
                    nbytes = _Torch.storage_nbytes(storage)
                    base = _Torch.tensor_data_ptr(tensor)
                except (TypeError, RuntimeError):  # not a real tensor underneath, or no storage: no memory
                    continue
                entries.append((name, storage, start, nbytes, base - start))
        self.entries = tuple(entries)
        self.bound = True
        self._rebuild()

    def _rebuild(self) -> None:
        self.ranges = AllowedRanges(
            StorageSpan(name, start, nbytes, start + shift) for name, _, start, nbytes, shift in self.entries
        )

    def current_ranges(self) -> AllowedRanges:
        """The ranges, refreshed if an argument's storage was resized or freed since the launch began."""
        data_ptr, nbytes_of = _Torch.storage_data_ptr, _Torch.storage_nbytes
        for _, storage, start, nbytes, _ in self.entries:
            if data_ptr(storage) != start or nbytes_of(storage) != nbytes:
                self.entries = tuple(
                    (name, st, data_ptr(st), nbytes_of(st), shift) for name, st, _, _, shift in self.entries
                )
                self._rebuild()
                break
        return self.ranges


def _named_tensors(named_values: Iterable[tuple[str, Any]], depth: int = 0) -> Iterator[tuple[str, Any]]:
    """(name, tensor) for every tensor in the arguments, the way Triton accepts them nested."""
    for name, value in named_values:
        kind = type(value)
        if issubclass(kind, _Torch.wrapper):
            value = getattr(value, "base", None)
            kind = type(value)
        if issubclass(kind, _Torch.tensor):
            yield name, value
        elif depth >= _MAX_DEPTH:
            continue
        elif issubclass(kind, _Torch.descriptor):
            yield from _named_tensors([(f"{name}.base", getattr(value, "base", None))], depth + 1)
        elif issubclass(kind, tuple):
            fields = getattr(kind, "_fields", None)
            labels = (
                [f"{name}.{f}" for f in fields]
                if isinstance(fields, tuple) and len(fields) == tuple.__len__(value)
                else [f"{name}[{i}]" for i in range(tuple.__len__(value))]
            )
            yield from _named_tensors(zip(labels, tuple.__iter__(value), strict=True), depth + 1)


def _stack() -> list[_Launch]:
    stack = getattr(_TLS, "stack", None)
    if stack is None:
        stack = _TLS.stack = []
    return stack


def _kernel_name(executor: Any) -> str:
    name = getattr(getattr(executor, "fn", None), "__name__", None)
    return name if type(name) is str else "<kernel>"


# --- the check -----------------------------------------------------------------------------------


def _private(array: Any) -> Any:
    """A copy nobody else holds (NumPy arrays): no other thread can change an address or an item
    size between the check and the access. Anything else is passed on unchanged."""
    return np.array(array) if isinstance(array, np.ndarray) else array


def _guard(kind: str, ptr: Any, mask: Any, itemsize: int) -> tuple[Any, Any]:
    """Checks the active lanes of one access; returns the private copies to hand to the native call.

    Fast path: the lowest and highest active address inside one range (two masked reductions);
    otherwise lane by lane (vectorised).
    """
    _Counts.checks += 1
    ptr = _private(ptr)
    mask = _private(mask)
    addresses = ptr if type(ptr) is np.ndarray else np.asarray(ptr)
    if addresses.dtype != np.uint64:  # the native call refuses it (newer) or casts the same way (older)
        addresses = addresses.astype(np.uint64)
    if addresses.size == 0:
        return ptr, mask
    stack = _stack()
    launch = stack[-1] if stack else None
    ranges = launch.current_ranges() if launch is not None else _NOTHING
    active = None if mask is None else np.asarray(mask)
    # a mask of another size makes the native loop read past it: then every lane counts as active
    if active is not None and active.size == addresses.size:
        if active.dtype != np.bool_:
            active = active.astype(np.bool_)
        active = active.reshape(addresses.shape)
        lowest = int(addresses.min(where=active, initial=_NO_ADDRESS))
        highest = int(addresses.max(where=active, initial=0))
        if lowest > highest:  # no active lane
            return ptr, mask
    else:
        active = None
        lowest, highest = int(addresses.min()), int(addresses.max())
    if ranges.starts and ranges.holds_block(lowest, highest, itemsize):
        return ptr, mask
    addresses = addresses.reshape(-1) if active is None else addresses[active]
    bad = ranges.outside(addresses, itemsize)
    if bad.any():
        _refuse(kind, launch, ranges, addresses[bad])
    return ptr, mask


def _refuse(kind: str, launch: _Launch | None, ranges: AllowedRanges, outside: np.ndarray) -> None:
    first = int(outside[0])
    span = ranges.nearest(first)
    error = OutOfBoundsAccess(
        kernel=launch.kernel if launch is not None else NO_LAUNCH,
        kind=kind,
        argument=span.argument if span else NO_ARGUMENT,
        offset=first - span.base if span else None,
        count=int(outside.size),
        address=first,
        window=(span.start - span.base, span.end - span.base) if span else None,
    )
    if len(_Counts.violations) < MAX_RECORDED:
        _Counts.violations.append(error)
    else:
        _Counts.dropped += 1
    raise error


def _load(ptr: Any, mask: Any, other: Any, ret_dtype: Any) -> Any:
    if _Counts.active:
        ptr, mask = _guard(READ, ptr, mask, np.dtype(ret_dtype).itemsize)
    return _NATIVE.load(ptr, mask, other, ret_dtype)


def _store(ptr: Any, value: Any, mask: Any) -> Any:
    if _Counts.active:
        value = _private(value)
        ptr, mask = _guard(WRITE, ptr, mask, np.asarray(value).itemsize)
    return _NATIVE.store(ptr, value, mask)


def _atomic_rmw(op: Any, ptr: Any, val: Any, mask: Any, sem: Any) -> Any:
    if _Counts.active:
        val = _private(val)
        ptr, mask = _guard(ATOMIC, ptr, mask, np.asarray(val).itemsize)
    return _NATIVE.atomic_rmw(op, ptr, val, mask, sem)


def _atomic_cas(ptr: Any, cmp: Any, val: Any, sem: Any) -> Any:
    if _Counts.active:
        cmp, val = _private(cmp), _private(val)
        ptr, _ = _guard(ATOMIC, ptr, None, np.asarray(cmp).itemsize)  # compare-and-swap has no mask
    return _NATIVE.atomic_cas(ptr, cmp, val, sem)


# --- launches ------------------------------------------------------------------------------------


def _wrap_call(original: Any, binds_itself: bool) -> Any:
    def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N807 - replaces GridExecutor.__call__
        if not _Counts.active:
            return original(self, *args, **kwargs)
        launch = _Launch(_kernel_name(self), self)
        if binds_itself:  # a triton without _init_args_hst: the host arguments are the caller's
            names = list(getattr(self, "arg_names", []))
            launch.bind([*_positional(names, args), *kwargs.items()])
        stack = _stack()
        stack.append(launch)
        _Counts.launches += 1
        try:
            return original(self, *args, **kwargs)
        finally:
            if launch in stack:
                stack.remove(launch)

    setattr(__call__, _MARK, True)
    return __call__


def _wrap_init_args(original: Any) -> Any:
    def _init_args_hst(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(self, *args, **kwargs)
        stack = _stack()
        if _Counts.active and stack and stack[-1].executor is self and not stack[-1].bound:
            try:
                args_hst, kwargs_hst = result
                named = [*_positional(list(getattr(self, "arg_names", [])), args_hst), *dict(kwargs_hst).items()]
            except (TypeError, ValueError):  # an unknown layout: nothing is allowed (fails closed)
                named = []
            stack[-1].bind(named)
        return result

    setattr(_init_args_hst, _MARK, True)
    return _init_args_hst


def _wrap_compile_and_exec(original: Any, interpreter_globals: dict[str, Any]) -> Any:
    """The rewriter without its leak: it copies every global of Triton's interpreter module (NumPy,
    the native module, the builder, ``TensorHandle``) into the namespace of the module whose kernel
    it rewrites, where kernel bodies and host code could use NumPy's raw-memory views. Only the
    names the rewritten code refers to stay."""

    def _compile_and_exec(self: Any, *args: Any, **kwargs: Any) -> Any:
        namespace = getattr(getattr(self, "fn", None), "__globals__", None)
        before = set(namespace) if type(namespace) is dict else None
        try:
            return original(self, *args, **kwargs)
        finally:
            if before is not None and _Counts.active:
                for key in [k for k in namespace if k not in before and k not in _KEEP_INJECTED]:
                    if namespace[key] is interpreter_globals.get(key):
                        del namespace[key]

    setattr(_compile_and_exec, _MARK, True)
    return _compile_and_exec


def _positional(names: list[str], values: Any) -> list[tuple[str, Any]]:
    return [(names[i] if i < len(names) and type(names[i]) is str else f"arg{i}", v) for i, v in enumerate(values)]


def _proxy(native: Any) -> types.ModuleType:
    proxy = types.ModuleType(getattr(native, "__name__", _NATIVE_NAME), getattr(native, "__doc__", None))
    for name in dir(native):
        if not name.startswith("__"):
            setattr(proxy, name, getattr(native, name))
    proxy.load = _load  # type: ignore[attr-defined]
    proxy.store = _store  # type: ignore[attr-defined]
    proxy.atomic_rmw = _atomic_rmw  # type: ignore[attr-defined]
    proxy.atomic_cas = _atomic_cas  # type: ignore[attr-defined]
    setattr(proxy, _MARK, True)
    return proxy


# --- public switches -----------------------------------------------------------------------------


def install() -> bool:
    """Check every interpreted memory access in this process from now on (idempotent).

    Call it before the candidate's module is imported (the interpreter copies its own globals,
    the native module among them, into the module of every kernel it rewrites).

    Returns:
        ``False`` where torch or triton's interpreter is missing, else ``True``.
    """
    global _NATIVE
    try:
        import torch
        import triton._C.libtriton as libtriton
        from triton.runtime import interpreter
        from triton.runtime.jit import TensorWrapper
    except ImportError:
        return False
    with _INSTALL_LOCK:
        current = getattr(interpreter, "_interpreter", None)
        executor = interpreter.GridExecutor
        if current is None or not callable(getattr(current, "store", None)):
            return False
        if not getattr(current, _MARK, False):
            try:
                from triton.tools.tensor_descriptor import TensorDescriptor
            except ImportError:  # pragma: no cover - triton releases before tensor descriptors
                TensorDescriptor = _Unset
            _Torch.tensor = torch.Tensor
            _Torch.storage_of = torch._C.TensorBase.untyped_storage
            _Torch.tensor_data_ptr = torch._C.TensorBase.data_ptr
            _Torch.storage_data_ptr = torch._C.StorageBase.data_ptr
            _Torch.storage_nbytes = torch._C.StorageBase.nbytes
            _Torch.no_torch_function = torch._C.DisableTorchFunction
            _Torch.wrapper = TensorWrapper
            _Torch.descriptor = TensorDescriptor
            _NATIVE = current
            proxy = _proxy(current)
            interpreter._interpreter = proxy
            if getattr(libtriton, "interpreter", None) is current:
                libtriton.interpreter = proxy
            for name, module in list(sys.modules.items()):
                if module is current:
                    sys.modules[name] = proxy
        if not getattr(executor.__call__, _MARK, False):
            has_init = callable(getattr(executor, "_init_args_hst", None))
            executor.__call__ = _wrap_call(executor.__call__, binds_itself=not has_init)
            if has_init:
                executor._init_args_hst = _wrap_init_args(executor._init_args_hst)
        rewriter = getattr(interpreter, "FunctionRewriter", None)
        original = getattr(rewriter, "_compile_and_exec", None)
        if callable(original) and not getattr(original, _MARK, False):
            rewriter._compile_and_exec = _wrap_compile_and_exec(original, vars(interpreter))  # type: ignore[union-attr]
        _Counts.active = True
    return True


def uninstall() -> None:
    """Stop checking (the wrappers stay in place and pass through). For benchmarks and tests only:
    the evaluator never calls it."""
    _Counts.active = False


def is_installed() -> bool:
    """Whether the check is active in this process; imports nothing."""
    interpreter = sys.modules.get("triton.runtime.interpreter")
    native = getattr(interpreter, "_interpreter", None)
    return bool(_Counts.active and getattr(native, _MARK, False))


def state() -> MemcheckState:
    """A snapshot of what the check has seen in this process (no launch or thread needed)."""
    return MemcheckState(
        installed=is_installed(),
        launches=_Counts.launches,
        checks=_Counts.checks,
        violations=tuple(_Counts.violations),
        dropped=_Counts.dropped,
    )


def reset() -> None:
    """Clear the counters and the recorded violations."""
    _Counts.launches = _Counts.checks = _Counts.dropped = 0
    _Counts.violations = []


def find_out_of_bounds(error: BaseException | None) -> OutOfBoundsAccess | None:
    """The :class:`OutOfBoundsAccess` in ``error``'s cause/context chain (the interpreter wraps
    kernel errors in ``InterpreterError``), or ``None``."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, OutOfBoundsAccess):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


__all__ = [
    "ATOMIC",
    "MAX_RECORDED",
    "NO_ARGUMENT",
    "NO_LAUNCH",
    "READ",
    "WRITE",
    "AllowedRanges",
    "MemcheckState",
    "OutOfBoundsAccess",
    "StorageSpan",
    "find_out_of_bounds",
    "install",
    "is_installed",
    "reset",
    "state",
    "uninstall",
]
