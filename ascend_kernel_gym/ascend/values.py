"""Abstract values of the kernel analysis: what is known about one value, dtype tables, constant folding.

A :class:`Val` carries a shape (dims may be unknown), an element dtype, a constant when known, and
flags that the rules need (loaded from memory, made by ``tl.where``, by ``//`` / ``%``, by
``tl.dot``). The tables map Triton and torch dtype names to short names (``"fp16"``, ``"int64"``)
and name the ``tl`` functions the analyser treats as reductions, scans, atomics and descriptor calls.
"""

from __future__ import annotations

import ast
import operator
from dataclasses import dataclass
from typing import Any

#: ``tl`` dtype names -> short names
TL_DTYPES = {
    "float16": "fp16",
    "half": "fp16",
    "bfloat16": "bf16",
    "float32": "fp32",
    "float": "fp32",
    "float64": "fp64",
    "double": "fp64",
    "float8e4nv": "fp8",
    "float8e5": "fp8",
    "float8e4b15": "fp8",
    "float8e4b8": "fp8",
    "float8e5b16": "fp8",
    "int1": "int1",
    "bool": "int1",
    "int8": "int8",
    "int16": "int16",
    "int32": "int32",
    "int64": "int64",
    "uint8": "uint8",
    "uint16": "uint16",
    "uint32": "uint32",
    "uint64": "uint64",
}
#: bytes per element of each short dtype
DTYPE_BYTES = {
    "fp16": 2,
    "bf16": 2,
    "fp32": 4,
    "fp64": 8,
    "fp8": 1,
    "int1": 1,
    "int8": 1,
    "int16": 2,
    "int32": 4,
    "int64": 8,
    "uint8": 1,
    "uint16": 2,
    "uint32": 4,
    "uint64": 8,
}
#: torch dtype names (without ``torch.``) -> short names
TORCH_DTYPES = {
    "float16": "fp16",
    "half": "fp16",
    "bfloat16": "bf16",
    "float32": "fp32",
    "float": "fp32",
    "float64": "fp64",
    "double": "fp64",
    "int8": "int8",
    "int16": "int16",
    "int32": "int32",
    "int": "int32",
    "int64": "int64",
    "long": "int64",
    "uint8": "uint8",
    "uint16": "uint16",
    "uint32": "uint32",
    "uint64": "uint64",
    "bool": "int1",
    "float8_e4m3fn": "fp8",
    "float8_e5m2": "fp8",
}
#: float dtypes, widest first (promotion picks the first present)
FLOATS = ("fp64", "fp32", "bf16", "fp16", "fp8")
#: dtypes triton-ascend does not support in kernel code
UNSUPPORTED_CODE_DTYPES = ("fp64", "uint8", "uint16", "uint32", "uint64")
#: ``tl`` functions the analyser treats as reductions, scans, atomics and tensor-descriptor calls
REDUCTIONS = frozenset({"sum", "max", "min", "argmax", "argmin", "reduce", "xor_sum", "prod"})
SCANS = frozenset({"cumsum", "cumprod", "associative_scan"})
ATOMICS = frozenset(
    {"atomic_add", "atomic_max", "atomic_min", "atomic_xchg", "atomic_cas", "atomic_and", "atomic_or", "atomic_xor"}
)
DESCRIPTOR_CALLS = frozenset(
    {
        "make_tensor_descriptor",
        "_experimental_make_tensor_descriptor",
        "load_tensor_descriptor",
        "store_tensor_descriptor",
        "_experimental_descriptor_load",
        "_experimental_descriptor_store",
    }
)


# ----------------------------------------------------------------------------- abstract values


class _Unknown:
    def __repr__(self) -> str:
        return "?"


UNKNOWN = _Unknown()


@dataclass
class Val:
    """What the analysis knows about one value inside a kernel."""

    shape: tuple[int | None, ...] | None = None  # None / () = scalar; dims may be None (unknown)
    dtype: str | None = None  # element dtype ("fp32", "int64", ...); pointee dtype for pointers
    ptr: bool = False
    block_ptr: bool = False
    const: Any = UNKNOWN
    loaded: bool = False  # derived from data loaded from memory
    where: bool = False  # derived from tl.where
    divmod: bool = False  # derived from a tensor // or %
    from_dot: bool = False
    int_cmp: bool = False  # a comparison of integer tensors
    dtype_obj: str | None = None  # this value is a dtype object (tl.float16 -> "fp16")
    items: list[Val] | None = None  # tuples
    module: str | None = None  # a module / namespace (tl, tl.math)
    root: str | None = None  # for pointers: the kernel parameter they derive from

    @property
    def is_tensor(self) -> bool:
        return bool(self.shape)

    @property
    def numel(self) -> int | None:
        if not self.shape:
            return 1
        n = 1
        for d in self.shape:
            if d is None:
                return None
            n *= d
        return n

    @property
    def nbytes(self) -> int | None:
        n = self.numel
        if n is None or self.dtype is None or self.ptr:
            return None
        return n * DTYPE_BYTES.get(self.dtype, 4)


def const_val(value: Any) -> Val:
    """The abstract value of a Python constant (ints wider than int32 are int64)."""
    if isinstance(value, bool):
        return Val(dtype="int1", const=value)
    if isinstance(value, int):
        return Val(dtype="int32" if -(2**31) <= value < 2**31 else "int64", const=value)
    if isinstance(value, float):
        return Val(dtype="fp32", const=value)
    if isinstance(value, (tuple, list)):
        return Val(items=[const_val(v) for v in value], const=tuple(value))
    return Val(const=value)


def broadcast(*shapes: tuple[int | None, ...] | None) -> tuple[int | None, ...] | None:
    """The broadcast shape of ``shapes`` (scalars ignored; ``None`` when all are scalars)."""
    present = [s for s in shapes if s]
    if not present:
        return None
    rank = max(len(s) for s in present)
    out: list[int | None] = []
    for i in range(rank):
        dims = [s[len(s) - rank + i] for s in present if len(s) - rank + i >= 0]
        known = [d for d in dims if d is not None and d != 1]
        if known:
            out.append(max(known))
        elif any(d is None for d in dims):
            out.append(None)
        else:
            out.append(1)
    return tuple(out)


def promote(a: Val, b: Val) -> str | None:
    """Result dtype of an arithmetic op (Triton-like: Python literals are weakly typed)."""
    da = None if (a.const is not UNKNOWN and not a.is_tensor and not a.ptr and a.dtype != "int64") else a.dtype
    db = None if (b.const is not UNKNOWN and not b.is_tensor and not b.ptr and b.dtype != "int64") else b.dtype
    if da is None:
        return db or a.dtype
    if db is None:
        return da
    for f in FLOATS:
        if f in (da, db):
            return f
    if "int64" in (da, db) or "uint64" in (da, db):
        return "int64"
    return da


def replace_val(v: Val, **changes: Any) -> Val:
    """A copy of ``v`` with ``changes`` applied."""
    data = dict(v.__dict__)
    data.update(changes)
    return Val(**data)


def fold(op: ast.operator, a: Any, b: Any) -> Any:
    """``a op b`` for numeric constants, else :data:`UNKNOWN` (division by zero and huge powers too)."""
    if not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
        return UNKNOWN
    table = {
        ast.Add: lambda: a + b,
        ast.Sub: lambda: a - b,
        ast.Mult: lambda: a * b,
        ast.FloorDiv: lambda: a // b if b else UNKNOWN,
        ast.Mod: lambda: a % b if b else UNKNOWN,
        ast.Div: lambda: a / b if b else UNKNOWN,
        ast.LShift: lambda: a << b,
        ast.RShift: lambda: a >> b,
        ast.Pow: lambda: a**b if abs(b) < 64 else UNKNOWN,
    }
    fn = table.get(type(op))
    return fn() if fn else UNKNOWN


UNARY_OPS = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_, ast.Invert: operator.invert}
COMPARE_OPS = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}


def tensor_dtype(name: Any) -> str | None:
    """The short dtype name of a torch dtype name (``"torch.float16"`` / ``"float16"`` -> ``"fp16"``)."""
    return TORCH_DTYPES.get(str(name).replace("torch.", ""))
