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
    scalars, members of ``enum.IntEnum`` / ``enum.IntFlag`` classes (handed to Triton as plain ints,
    see :meth:`plain`), ``torch.dtype``, Triton's own values (``tl.constexpr``, ``tl.dtype``,
    @triton.jit functions), plain tuples and namedtuples of those (a namedtuple class may add public
    methods, properties and constants of its own, see :func:`namedtuple_problem`), and host-side
    tensor descriptors of tensors.

    Anything else (a tensor subclass, an object that imitates a tensor with ``data_ptr`` or
    ``__cuda_array_interface__``, a class of the candidate's) would run its own code where Triton
    or the harness handles arguments: copies with recording suspended, specialisation keys,
    autotune hooks, launch records. Types are compared by identity (``id(type(x))`` against the
    classes known when the policy is built, before the candidate is imported): no ``isinstance``,
    no attribute lookup on the value, nothing of the candidate's runs during the check.
    """

    MAX_DEPTH = 8

    def __init__(self) -> None:
        import enum
        import types

        import triton.language as tl

        exact: list[type] = [torch.Tensor, torch.nn.Parameter, type(None), bool, int, float, str, torch.dtype]
        for base in (tl.constexpr, tl.dtype, *_triton_callables()):
            exact.extend(c for c in _subclasses(base) if str(c.__module__).startswith("triton."))
        self._exact = frozenset(id(kind) for kind in exact)
        self._tensor_kinds = frozenset(id(kind) for kind in (torch.Tensor, torch.nn.Parameter))
        #: what a tensor's instance attribute must not hide: Triton's launcher and the harness call
        #: ``storage_offset()``, ``size()``, ``new_empty()``, ... through the instance
        self._tensor_names = frozenset(name for kind in torch.Tensor.__mro__ for name in vars(kind))
        self._instance_dict = vars(torch.Tensor)["__dict__"]  # a data descriptor: nothing can hide it
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
        self._enum_meta = enum.EnumMeta
        self._int_enum_mros = (enum.IntEnum.__mro__, enum.IntFlag.__mro__)
        self._namedtuples = NamedtupleShape()

    def _int_enum(self, kind: type) -> bool:
        """A class statement's ``enum.IntEnum`` / ``enum.IntFlag`` subclass (its members are ints).
        Read through ``type``'s own descriptors: a metaclass other than Enum's is not one."""
        if type(kind) is not self._enum_meta:
            return False
        mro = type.__dict__["__mro__"].__get__(kind, type)
        return any(mro[1:] == expected for expected in self._int_enum_mros)

    def plain(self, value: Any, depth: int = 0) -> Any:
        """``value`` as Triton gets it: every IntEnum / IntFlag member (also inside tuples and
        namedtuples) replaced by its plain ``int``, read with ``int``'s own slot, so neither Triton
        nor the harness meets a class of the candidate's later. Call after :meth:`problem` found
        nothing; anything else comes back as it is."""
        kind = type(value)
        if id(kind) in self._exact or depth >= self.MAX_DEPTH:
            return value
        if self._int_enum(kind):
            return int.__int__(value)
        if kind is tuple or (type(kind) is type and self._namedtuples.problem(kind) is None):
            items = tuple.__iter__(value)
            plain = [self.plain(item, depth + 1) for item in items]
            if all(a is b for a, b in zip(plain, tuple.__iter__(value), strict=True)):
                return value
            return tuple.__new__(kind, plain)  # no ``__new__`` of the class runs
        return value

    def plain_arguments(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """:meth:`plain` of every positional and keyword argument."""
        return tuple(self.plain(a) for a in args), {k: self.plain(v) for k, v in kwargs.items()}

    def problem(self, value: Any, depth: int = 0) -> str | None:
        """Why ``value`` may not be a kernel argument, or None."""
        kind = type(value)
        if id(kind) in self._constexprs:  # ``tl.constexpr(v)``: what it wraps counts
            if depth >= self.MAX_DEPTH:
                return "is nested too deeply"
            problem = self.problem(object.__getattribute__(value, "__dict__").get("value"), depth + 1)
            return None if problem is None else f"wraps a value that {problem}"
        if id(kind) in self._tensor_kinds:
            hidden = sorted(name for name in self._instance_dict.__get__(value) if name in self._tensor_names)
            if hidden:
                return f"has an instance attribute `{cut_string(str(hidden[0]), 40)}` hiding the tensor's own"
            return None
        if id(kind) in self._exact:
            return None
        if depth >= self.MAX_DEPTH:
            return "is nested too deeply"
        shape_problem = self._namedtuples.problem(kind) if kind is not tuple and type(kind) is type else None
        if kind is tuple or (type(kind) is type and shape_problem is None):
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
        if self._int_enum(kind):
            return None  # an int; :meth:`plain` hands Triton the int itself
        if shape_problem is not None and shape_problem != NOT_A_NAMEDTUPLE:
            return f"is a namedtuple `{name}` that {shape_problem}"
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


#: what ``collections.namedtuple`` / ``typing.NamedTuple`` put in a class as plain data (beyond
#: the methods checked against a reference class and one accessor per field), with its types
_NAMEDTUPLE_DATA: dict[str, tuple[type, ...]] = {
    "__doc__": (str, type(None)),
    "__slots__": (tuple,),
    "_fields": (tuple,),
    "_field_defaults": (dict,),
    "__match_args__": (tuple,),
    "__module__": (str,),
    "__qualname__": (str,),
    "__orig_bases__": (tuple,),
    "__annotations__": (dict,),
}
#: namedtuple's generated methods, compared by code object with those of a reference class
_NAMEDTUPLE_METHODS = ("_make", "_replace", "__repr__", "_asdict", "__getnewargs__")
#: attribute names Triton, PyTorch or the harness look up on a kernel argument: a namedtuple's own
#: additions may not use them (a ``data_ptr`` property would run where recording is suspended)
PROBED_NAMES = frozenset(
    {"data_ptr", "dtype", "tma_desc_cpu_ptr", "cache_key", "base", "shape", "strides", "block_shape", "value"}
)
#: the problem :meth:`NamedtupleShape.problem` gives a class that is no namedtuple at all
NOT_A_NAMEDTUPLE = "is not a namedtuple"


class NamedtupleShape:
    """Recognises the classes ``collections.namedtuple`` and ``typing.NamedTuple`` make, including
    ones whose class body adds public methods, properties and constants (a ``@property`` over the
    fields). Everything is read from the class's own dictionary through ``type``'s descriptors,
    nothing of the candidate's runs: the generated members must be the generated ones (same code as
    a reference class's), each field an accessor of ``collections``, every addition a public name
    that nobody probes, holding a function, property, static / class method or plain constant.
    Instances of such a class have no ``__dict__`` (``__slots__ = ()``) and are read as tuples."""

    def __init__(self) -> None:
        import collections
        import types

        reference = collections.namedtuple("Reference", "a b")
        own = type.__dict__["__dict__"].__get__(reference, type)
        self._getter = type(own["a"])
        self._codes = {name: _code(own[name]) for name in _NAMEDTUPLE_METHODS}
        self._tuple_new = tuple.__new__
        self._function = types.FunctionType
        self._addition_kinds = (types.FunctionType, property, staticmethod, classmethod)
        self._constants = (bool, int, float, str, type(None))

    def problem(self, kind: type) -> str | None:
        """Why ``kind`` is not such a namedtuple class (``NOT_A_NAMEDTUPLE`` when it is no namedtuple
        at all), or None."""
        if type(kind) is not type:
            return NOT_A_NAMEDTUPLE
        bases = type.__dict__["__bases__"].__get__(kind, type)
        own = type.__dict__["__dict__"].__get__(kind, type)
        fields = own.get("_fields")
        if len(bases) != 1 or bases[0] is not tuple or type(fields) is not tuple:
            return NOT_A_NAMEDTUPLE
        if not all(type(name) is str for name in own) or not all(type(f) is str for f in fields):
            return "has odd names in its class"
        for field_name in fields:
            if type(own.get(field_name)) is not self._getter:
                return f"replaces the accessor of its field `{cut_string(field_name, 40)}`"
        new = own.get("__new__")
        if type(new) is not staticmethod or not self._generated_new(new.__func__):
            return "has a `__new__` of its own"
        for name, code in self._codes.items():
            if _code(own.get(name)) is not code:
                return f"has a `{name}` of its own"
        for name, member in own.items():
            if name in _NAMEDTUPLE_DATA:
                if type(member) not in _NAMEDTUPLE_DATA[name]:
                    return f"holds a `{type_name(type(member))}` as `{name}`"
                continue
            if name in fields or name in self._codes or name == "__new__":
                continue
            if name.startswith("_") or name in PROBED_NAMES:
                return f"defines `{cut_string(name, 40)}` (only public methods, properties and constants may be added)"
            if type(member) not in self._addition_kinds and type(member) not in self._constants:
                return f"holds a `{type_name(type(member))}` as `{cut_string(name, 40)}`"
        return None

    def _generated_new(self, function: Any) -> bool:
        """``__new__`` as ``collections.namedtuple`` builds it: ``_tuple_new(_cls, (fields...))``
        with ``tuple.__new__`` in its globals."""
        if type(function) is not self._function:
            return False
        scope = function.__globals__
        if type(scope) is not dict or scope.get("_tuple_new") is not self._tuple_new:
            return False
        name, builtins = scope.get("__name__"), scope.get("__builtins__")
        return type(name) is str and name.startswith("namedtuple_") and type(builtins) is dict and not builtins


def _code(member: Any) -> Any:
    """The code object of a plain function or of one wrapped in a class / static method, or None."""
    import types

    if type(member) in (classmethod, staticmethod):
        member = member.__func__
    return member.__code__ if type(member) is types.FunctionType else None


def named_arguments(names: list[str], args: Any, kwargs: dict[str, Any]) -> list[tuple[str, Any]]:
    """Kernel arguments with their parameter names (``#i`` past the known names)."""
    named = [(names[i] if i < len(names) else f"#{i}", value) for i, value in enumerate(args)]
    named.extend(kwargs.items())
    return named
