"""Which objects may be kernel launch arguments (evaluator children only; imports torch and triton).

The launch recorder (:mod:`.recorder`) asks :class:`LaunchArgumentPolicy` about every argument of
every Triton launch, before Triton or the harness touches it. Only exact ``torch.Tensor`` /
``nn.Parameter`` objects and plain values pass: a tensor subclass or a tensor-like object would
otherwise run its own methods where Triton's launcher, its interpreter's argument copies or the
autotuner's hooks call them, some with the operator recorder suspended.
"""

from __future__ import annotations

from typing import Any

import torch

from ascend_kernel_gym.evaluation.errors import StageError
from ascend_kernel_gym.evaluation.result import ErrorType

#: the longest string a launch record keeps of a constexpr (a 16 MB string copied into every
#: record would make the result as large)
MAX_RECORD_STRING = 256


def cut_string(text: str, limit: int = MAX_RECORD_STRING) -> str:
    """``text``, or its first ``limit`` characters and a note of how many were cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [{len(text) - limit} characters cut]"


def type_name(kind: type) -> str:
    """A class's ``__name__`` read without running a metaclass of the candidate's."""
    name = type.__dict__["__name__"].__get__(kind, type)
    return cut_string(name, 80) if type(name) is str else "?"


class LaunchArgumentPolicy:
    """Which objects may be kernel arguments: exactly ``torch.Tensor`` / ``nn.Parameter``, plain
    scalars, ``torch.dtype``, Triton's own values (``tl.constexpr``, ``tl.dtype``, @triton.jit
    functions), plain tuples and namedtuples of those, and host-side tensor descriptors of tensors.

    Anything else (a tensor subclass, an object that imitates a tensor with ``data_ptr`` or
    ``__cuda_array_interface__``, a class of the candidate's) would run its own code where Triton
    or the harness handles arguments: copies with recording suspended, specialisation keys,
    autotune hooks, launch records. Types are compared by identity (``id(type(x))`` against the
    classes known when the policy is built, before the candidate is imported): no ``isinstance``,
    no attribute lookup on the value, nothing of the candidate's runs during the check.
    """

    MAX_DEPTH = 8

    def __init__(self) -> None:
        import types

        import triton.language as tl

        exact: list[type] = [torch.Tensor, torch.nn.Parameter, type(None), bool, int, float, str, torch.dtype]
        for base in (tl.constexpr, tl.dtype, *_triton_callables()):
            exact.extend(c for c in _subclasses(base) if str(c.__module__).startswith("triton."))
        self._exact = frozenset(id(kind) for kind in exact)
        self._constexprs = frozenset(
            id(c) for c in _subclasses(tl.constexpr) if str(c.__module__).startswith("triton.")
        )
        self._function = types.FunctionType
        self._sequences = frozenset(id(kind) for kind in (list, tuple, torch.Size))
        try:
            from triton.tools.tensor_descriptor import TensorDescriptor
        except ImportError:  # pragma: no cover - older triton
            self._descriptor: type | None = None
        else:
            self._descriptor = TensorDescriptor

    def problem(self, value: Any, depth: int = 0) -> str | None:
        """Why ``value`` may not be a kernel argument, or None."""
        kind = type(value)
        if id(kind) in self._constexprs:  # ``tl.constexpr(v)``: what it wraps counts
            if depth >= self.MAX_DEPTH:
                return "is nested too deeply"
            problem = self.problem(object.__getattribute__(value, "__dict__").get("value"), depth + 1)
            return None if problem is None else f"wraps a value that {problem}"
        if id(kind) in self._exact:
            return None
        if depth >= self.MAX_DEPTH:
            return "is nested too deeply"
        if kind is tuple or _plain_namedtuple(kind):
            for item in tuple.__iter__(value):
                problem = self.problem(item, depth + 1)
                if problem is not None:
                    return f"holds an item that {problem}"
            return None
        if kind is self._function:
            module = value.__module__
            if type(module) is str and module.startswith("triton."):
                return None  # a triton.language function handed over as a constexpr
        if kind is self._descriptor:
            return self._descriptor_problem(object.__getattribute__(value, "__dict__"))
        name = type_name(kind)
        if _imitates_tensor(kind):
            return f"is a `{name}`, not a torch.Tensor (tensor subclasses and tensor-like objects are forbidden)"
        return f"is a `{name}` object, not a tensor or a plain value"

    def _descriptor_problem(self, fields: dict[str, Any]) -> str | None:
        if type(fields.get("base")) is not torch.Tensor:
            return "is a tensor descriptor whose base is not exactly a torch.Tensor"
        for name in ("shape", "strides", "block_shape"):
            seq = fields.get(name)
            if id(type(seq)) not in self._sequences or any(type(v) is not int for v in tuple(seq)):
                return f"is a tensor descriptor whose {name} is not a sequence of ints"
        if type(fields.get("padding", "zero")) is not str or type(fields.get("round_f32_to_tf32", False)) is not bool:
            return "is a tensor descriptor with odd options"
        return None

    def check(self, kernel: str, named: list[tuple[str, Any]]) -> StageError | None:
        """The refusal for the first argument of ``named`` that may not be passed, or None."""
        for name, value in named:
            problem = self.problem(value)
            if problem is not None:
                return StageError(
                    ErrorType.FORBIDDEN,
                    f"kernel `{kernel}`: argument `{name}` {problem}; a kernel argument must be exactly a torch.Tensor "
                    "or nn.Parameter, a number, a string, None, a torch / triton.language dtype, a tl.constexpr, a "
                    "@triton.jit function, or a plain tuple / namedtuple of those",
                )
        return None


def _subclasses(base: type) -> list[type]:
    found = [base]
    for sub in type.__subclasses__(base):
        found.extend(_subclasses(sub))
    return found


def _triton_callables() -> list[type]:
    """Triton's kernel and function wrappers (@triton.jit, autotune, heuristics, constexpr functions)."""
    import triton.runtime.autotuner  # noqa: F401 - defines Autotuner / Heuristics
    from triton.runtime import jit

    found: list[type] = [jit.KernelInterface]
    if hasattr(jit, "JITCallable"):
        found.append(jit.JITCallable)
    try:
        from triton.runtime.interpreter import InterpretedFunction
    except ImportError:  # pragma: no cover
        pass
    else:
        found.append(InterpretedFunction)
    return found


def _imitates_tensor(kind: type) -> bool:
    """Whether a class is a tensor subclass or carries what Triton takes a tensor by (read from the
    classes' own dictionaries, so no attribute lookup of the candidate's runs)."""
    mro = type.__dict__["__mro__"].__get__(kind, type)
    if any(klass is torch.Tensor for klass in tuple.__iter__(mro)):
        return True
    marks = ("data_ptr", "__cuda_array_interface__", "__dlpack__", "__array_interface__")
    for klass in tuple.__iter__(mro):
        own = type.__dict__["__dict__"].__get__(klass, type)
        if any(type(name) is str and name in marks for name in own):
            return True
    return False


#: what ``collections.namedtuple`` puts in a class (beyond one accessor per field)
_NAMEDTUPLE_MEMBERS = frozenset(
    {
        "__doc__",
        "__slots__",
        "_fields",
        "_field_defaults",
        "__new__",
        "_make",
        "_replace",
        "__repr__",
        "_asdict",
        "__getnewargs__",
        "__match_args__",
        "__module__",
        "__qualname__",
        "__orig_bases__",
        "__annotations__",
    }
)


def _plain_namedtuple(kind: type) -> bool:
    """A class made by ``collections.namedtuple`` / ``typing.NamedTuple`` with nothing of its own
    added: Triton accepts those as kernel arguments, and none of their methods is the candidate's.
    Read through ``type``'s own descriptors (a metaclass of the candidate's runs nothing)."""
    if type(kind) is not type:
        return False
    bases = type.__dict__["__bases__"].__get__(kind, type)
    if len(bases) != 1 or bases[0] is not tuple:
        return False
    own = type.__dict__["__dict__"].__get__(kind, type)
    if not all(type(name) is str for name in own):
        return False
    fields = own.get("_fields")
    if type(fields) is not tuple or not all(type(f) is str for f in fields):
        return False
    return all(name in _NAMEDTUPLE_MEMBERS or name in fields for name in own)


def named_arguments(names: list[str], args: Any, kwargs: dict[str, Any]) -> list[tuple[str, Any]]:
    """Kernel arguments with their parameter names (``#i`` past the known names)."""
    named = [(names[i] if i < len(names) else f"#{i}", value) for i, value in enumerate(args)]
    named.extend(kwargs.items())
    return named
