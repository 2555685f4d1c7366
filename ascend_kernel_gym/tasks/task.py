"""The task model and the task-file loader.

A task file is a KernelBench file (``class Model(nn.Module)``, ``get_inputs()``,
``get_init_inputs()``, module-level size constants) with an optional ``TASK = {...}`` literal
that adds metadata and shape profiles::

    TASK = {
        "level": 1,
        "category": "activation",
        "description": "ReLU over a 2-D tensor.",
        "dtype": "float32",
        "atol": 1e-5, "rtol": 1e-5,
        "profiles": {"full": {"N": 4096, "D": 16384}, "small": {"N": 16, "D": 1024}},
    }

A profile overrides module-level constants before ``get_inputs()`` / ``get_init_inputs()`` run.
Module-level constants are literals or arithmetic over literals and earlier constants
(``N = 2048 * 2``, ``input_shape = (dim,)``); they are evaluated from the AST by a small
arithmetic evaluator. Loading parses the file with :mod:`ast` only: no torch import, no code
executed. Files are decoded as Python decodes them (UTF-8, a byte-order mark, a PEP 263 coding
line): :func:`read_python_source`.
"""

from __future__ import annotations

import ast
import hashlib
import io
import math
import operator
import re
import tokenize
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_TOLERANCES: dict[str, tuple[float, float]] = {
    # dtype: (atol, rtol); KernelBench uses 1e-4 for fp32 and 1e-2 for half types.
    "float32": (1e-4, 1e-4),
    "float16": (1e-2, 1e-2),
    "bfloat16": (2e-2, 2e-2),
}
LEVEL_DIR_RE = re.compile(r"^(?:level|l)[_-]?(\d+)$", re.IGNORECASE)
KNOWN_TASK_KEYS = frozenset(
    {"id", "name", "level", "category", "description", "dtype", "atol", "rtol", "profiles", "split", "tags"}
)
CATEGORY_KEYWORDS: list[tuple[str, tuple[str, ...]]] = [
    ("attention", ("attention", "attn", "sdpa")),
    ("normalization", ("norm",)),
    ("softmax", ("softmax",)),
    ("convolution", ("conv",)),
    ("matmul", ("matmul", "gemm", "bmm", "linear", "mm", "matrix")),
    ("reduction", ("sum", "mean", "max", "min", "argmax", "argmin", "reduce", "prod", "cumsum", "cumprod")),
    ("pooling", ("pool",)),
    ("loss", ("loss", "entropy")),
    ("activation", ("relu", "gelu", "silu", "sigmoid", "tanh", "swish", "elu", "softplus", "hardtanh", "mish")),
]


class TaskLoadError(ValueError):
    """A task file could not be loaded; the message names the file and the problem."""


class UnknownTaskError(KeyError):
    """An unknown task id or profile. A :class:`KeyError` whose ``str()`` is the plain message
    (a bare ``KeyError`` prints its message in quotes)."""

    def __str__(self) -> str:
        return str(self.args[0]) if len(self.args) == 1 else super().__str__()


def decode_python_source(data: bytes) -> str:
    """Decode a Python file's bytes the way the interpreter does.

    A UTF-8 byte-order mark is dropped, a PEP 263 coding line (``# -*- coding: latin-1 -*-``) is
    honoured, anything else is UTF-8; line endings become ``\n`` (as :func:`tokenize.open` gives
    them). Raises :class:`SyntaxError` (a bad coding line), :class:`UnicodeDecodeError` or
    :class:`LookupError` (an unknown encoding).
    """
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    with io.TextIOWrapper(io.BytesIO(data), encoding=encoding) as text:
        return text.read()


def read_python_source(path: str | Path) -> str:
    """The text of the Python file at ``path``, decoded as the interpreter decodes it.

    Raises :class:`ValueError` naming the file when it cannot be decoded; :class:`OSError` as
    :func:`open` does.
    """
    p = Path(path)
    data = p.read_bytes()
    hint = "save it as UTF-8, or declare its encoding on line 1 or 2: # -*- coding: latin-1 -*-"
    try:
        return decode_python_source(data)
    except SyntaxError as exc:  # detect_encoding: not UTF-8 and no usable coding line
        raise ValueError(f"{p}: cannot be decoded as Python source: {exc.msg} ({hint})") from None
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"{p}: not valid {exc.encoding} text (byte {data[exc.start : exc.start + 1]!r} at offset {exc.start}; "
            f"{hint})"
        ) from None
    except LookupError as exc:  # a coding line naming an unknown encoding
        raise ValueError(f"{p}: cannot be decoded as Python source: {exc}") from None


@dataclass(frozen=True)
class Task:
    """One problem: a PyTorch reference the agent must re-implement with Triton.

    Attributes:
        id: unique id, ``"<suite>/L<level>/<name>"`` for suite tasks.
        name: short name (the file stem).
        level: 1 single operators, 2 fusions, 3 blocks.
        category: coarse operator family (``activation``, ``matmul``, ...).
        description: one or two sentences for humans and prompts.
        source: the full text of the task file.
        dtype: main floating dtype of the inputs (``float32``, ``float16``, ``bfloat16``).
        atol: absolute tolerance of the correctness check.
        rtol: relative tolerance of the correctness check.
        profiles: profile name -> module constants to override (``full``, ``small``).
        path: where the file was loaded from, if anywhere.
        suite: the suite it belongs to, if any.
        split: ``train`` or ``test`` inside its suite, if any.
        solution_path: a reference Triton solution (defines ``ModelNew``), if bundled.
        tags: free-form labels.
    """

    id: str
    name: str
    level: int
    category: str
    description: str
    source: str
    dtype: str = "float32"
    atol: float = 1e-4
    rtol: float = 1e-4
    profiles: dict[str, dict[str, Any]] = field(default_factory=dict)
    path: str | None = None
    suite: str | None = None
    split: str | None = None
    solution_path: str | None = None
    tags: tuple[str, ...] = ()

    def __hash__(self) -> int:
        return hash((self.id, self.source_hash))

    @property
    def source_hash(self) -> str:
        return hashlib.sha256(self.source.encode()).hexdigest()

    def default_profile(self, backend: str) -> str:
        """``small`` on the interpreter when the task has it, else ``full``."""
        if backend == "interpreter" and "small" in self.profiles:
            return "small"
        return "full"

    def check_profile(self, profile: str) -> None:
        if profile not in self.profiles:
            raise UnknownTaskError(f"task {self.id!r} has no profile {profile!r}; it has {sorted(self.profiles)}")

    def solution_source(self) -> str | None:
        """The bundled reference solution's source, or ``None``."""
        if self.solution_path is None:
            return None
        return read_python_source(self.solution_path)

    def prompt_source(self, profile: str = "full") -> str:
        """The reference as the agent should see it: no ``TASK`` block, constants set to ``profile``.

        A constant the profile changes has its value replaced (``N = 2048 * 2`` becomes ``N = 64``,
        comments on the line are kept); a constant computed from others (``half = N // 2``) keeps
        its expression when that gives the profile's value.
        """
        self.check_profile(profile)
        overrides = self.profiles[profile]
        tree = ast.parse(self.source)
        lines = _LINE_ENDS.split(self.source)  # the lines ast numbers (str.splitlines splits on more)
        starts = [0]
        for line in lines:
            starts.append(starts[-1] + len(line))

        def offset(lineno: int, col: int) -> int:  # ast columns count UTF-8 bytes
            line = lines[lineno - 1]
            return starts[lineno - 1] + len(line.encode("utf-8")[:col].decode("utf-8", errors="ignore"))

        edits: list[tuple[int, int, str]] = []  # (start, end, replacement) offsets into the source
        env: dict[str, Any] = {}
        for node in tree.body:
            target = _single_target(node)
            if target == "TASK":
                edits.append(_removal_span(self.source, offset(node.lineno, node.col_offset), starts, node))
                continue
            value_node = getattr(node, "value", None) if target is not None else None
            if target is None or value_node is None:
                for name in _rebound_names(node):
                    env.pop(name, None)
                continue
            try:
                value: Any = _eval_constant(value_node, env)[0]
            except (_NotConstantError, RecursionError):
                value = _NOT_EVALUATED
            if target in overrides:
                wanted = overrides[target]
                if not _same_value(value, wanted):
                    first = offset(value_node.lineno, value_node.col_offset)
                    last = offset(value_node.end_lineno or value_node.lineno, value_node.end_col_offset or 0)
                    edits.append((first, last, repr(wanted)))
                env[target] = wanted
            elif value is _NOT_EVALUATED:
                env.pop(target, None)
            else:
                env[target] = value
        out = self.source
        for first, last, text in sorted(edits, reverse=True):
            out = out[:first] + text + out[last:]
        return re.sub(r"\n{4,}", "\n\n\n", out).strip() + "\n"


_NOT_EVALUATED = object()
_LINE_ENDS = re.compile(r"(?<=\n)|(?<=\r)(?!\n)")


def _same_value(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def _removal_span(source: str, first: int, starts: list[int], node: ast.stmt) -> tuple[int, int, str]:
    """The edit that deletes statement ``node`` (from ``first``): its whole lines when it is alone
    on them, else the statement and a following ``;``."""
    end_line = node.end_lineno or node.lineno
    line_start, line_end = starts[node.lineno - 1], starts[end_line]
    end_text = source[starts[end_line - 1] : line_end]
    end_col = len(end_text.encode("utf-8")[: node.end_col_offset or 0].decode("utf-8", errors="ignore"))
    last = starts[end_line - 1] + end_col
    before, after = source[line_start:first], source[last:line_end]
    if not before.strip() and (not after.strip() or after.strip().startswith("#")):
        return (line_start, line_end, "")
    match = re.match(r"[ \t]*;[ \t]*", after)
    return (first, last + (match.end() if match else 0), "")


def _single_target(node: ast.stmt) -> str | None:
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return node.target.id
    return None


class _NotConstantError(Exception):
    """The expression is not a constant the loader can evaluate."""


#: Limits of the constant evaluator (a task file must not make loading slow or huge).
_MAX_INT_BITS = 4096
_MAX_SEQUENCE = 64

_BINARY_OPS: dict[type[ast.operator], Any] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not (isinstance(value, float) and not math.isfinite(value))


def _checked(value: Any) -> Any:
    if isinstance(value, int) and value.bit_length() > _MAX_INT_BITS:
        raise _NotConstantError("integer too large")
    if isinstance(value, float) and not math.isfinite(value):
        raise _NotConstantError("not finite")
    if isinstance(value, (tuple, list)) and len(value) > _MAX_SEQUENCE:
        raise _NotConstantError("sequence too long")
    return value


def _eval_constant(node: ast.expr, env: dict[str, Any]) -> tuple[Any, bool]:
    """Evaluate a module-level constant expression without executing the file.

    Literals (numbers, strings, ``None``), ``+ - * / // % **`` and unary ``-``/``+`` over numbers,
    tuples and lists of those (``*name`` unpacking, ``+`` concatenation) and references to the
    constants in ``env``. Returns ``(value, uses_names)``; raises :class:`_NotConstantError` otherwise.
    """
    uses_names = False

    def ev(n: ast.expr) -> Any:
        nonlocal uses_names
        if isinstance(n, ast.Constant):
            if isinstance(n.value, (int, float, str, bytes, bool)) or n.value is None:
                return _checked(n.value)
            raise _NotConstantError(type(n.value).__name__)
        if isinstance(n, ast.Name):
            if n.id not in env:
                raise _NotConstantError(n.id)
            uses_names = True
            return env[n.id]
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, (ast.USub, ast.UAdd)):
            operand = ev(n.operand)
            if not _is_number(operand):
                raise _NotConstantError("unary operand")
            return _checked(-operand if isinstance(n.op, ast.USub) else +operand)
        if isinstance(n, ast.BinOp) and type(n.op) in _BINARY_OPS:
            left, right = ev(n.left), ev(n.right)
            if isinstance(n.op, ast.Add) and type(left) is type(right) and isinstance(left, (tuple, list)):
                return _checked(left + right)
            if not (_is_number(left) and _is_number(right)):
                raise _NotConstantError("operands")
            if isinstance(n.op, ast.Pow) and isinstance(left, int) and isinstance(right, int) and right > 0:
                if max(abs(left).bit_length() - 1, 0) * right > _MAX_INT_BITS:
                    raise _NotConstantError("power too large")
            try:
                return _checked(_BINARY_OPS[type(n.op)](left, right))
            except (ArithmeticError, ValueError) as exc:  # 1 / 0, overflow, negative ** fraction
                raise _NotConstantError(str(exc)) from None
        if isinstance(n, (ast.Tuple, ast.List)):
            items: list[Any] = []
            for element in n.elts:
                if isinstance(element, ast.Starred):
                    inner = ev(element.value)
                    if not isinstance(inner, (tuple, list)):
                        raise _NotConstantError("starred")
                    items.extend(inner)
                else:
                    items.append(ev(element))
            return _checked(tuple(items) if isinstance(n, ast.Tuple) else items)
        raise _NotConstantError(type(n).__name__)

    return ev(node), uses_names


def _is_main_guard(node: ast.stmt) -> bool:
    """``if __name__ == "__main__":`` (its body does not run when the task file is loaded)."""
    if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare) or len(node.test.ops) != 1:
        return False
    sides = [node.test.left, *node.test.comparators]
    names = [s.id for s in sides if isinstance(s, ast.Name)]
    values = [s.value for s in sides if isinstance(s, ast.Constant)]
    return isinstance(node.test.ops[0], ast.Eq) and names == ["__name__"] and values == ["__main__"]


def _rebound_names(node: ast.stmt) -> set[str]:
    """Module-level names a statement (other than ``NAME = value``) binds or deletes."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    if _is_main_guard(node):
        return set()
    names: set[str] = set()
    stack: list[ast.AST] = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, ast.Name) and isinstance(current.ctx, (ast.Store, ast.Del)):
            names.add(current.id)
        elif isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(current.name)
            continue  # its body has its own scope
        elif isinstance(current, ast.Lambda):
            continue
        stack.extend(ast.iter_child_nodes(current))
    return names


def _constant_steps(tree: ast.Module) -> list[tuple[str, ast.expr | None]]:
    """The module's top-level bindings in order: ``(name, expression)`` for ``NAME = expression``,
    ``(name, None)`` for anything else that rebinds ``name`` (it is no longer a known constant)."""
    steps: list[tuple[str, ast.expr | None]] = []
    for node in tree.body:
        name = _single_target(node)
        if name is not None:
            value = node.value  # type: ignore[union-attr]
            if value is not None and name != "TASK":
                steps.append((name, value))
            continue
        steps.extend((rebound, None) for rebound in sorted(_rebound_names(node)))
    return steps


def _evaluate_steps(
    steps: list[tuple[str, ast.expr | None]], shrink: bool = False, overrides: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Run the constant assignments in order. With ``shrink``, every constant written without
    names (``16384``, ``2048 * 2``, ``(32768,)``) is made small (:func:`shrink_size`); constants
    named in ``overrides`` take that value. Constants computed from other constants
    (``half = dim // 2``) are recomputed from the values so set."""
    env: dict[str, Any] = {}
    for name, expr in steps:
        if expr is None:
            env.pop(name, None)
            continue
        if overrides is not None and name in overrides:
            env[name] = overrides[name]
            continue
        try:
            value, uses_names = _eval_constant(expr, env)
        except _NotConstantError:
            try:  # other literals (dicts, sets, complex numbers): kept, never shrunk
                value, uses_names = ast.literal_eval(expr), True
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                env.pop(name, None)
                continue
        except RecursionError:
            env.pop(name, None)
            continue
        env[name] = shrink_size(value) if shrink and not uses_names else value
    return env


def _module_constants(tree: ast.Module) -> dict[str, Any]:
    """Module-level ``NAME = <constant expression>`` assignments (KernelBench's size constants),
    with their values as the file computes them."""
    return _evaluate_steps(_constant_steps(tree))


#: tag of tasks whose ``small`` profile was derived by the loader (the file had none)
AUTO_SMALL_TAG = "auto-small-profile"
AUTO_SMALL_FROM = 128
AUTO_SMALL_MIN = 64


def shrink_size(value: Any) -> Any:
    """The small version of one size constant: an int of at least ``AUTO_SMALL_FROM`` is halved
    while it stays even and at least ``AUTO_SMALL_MIN``; tuples and lists element by element;
    anything else unchanged. Equal sizes stay equal (the result depends on the value only)."""
    if isinstance(value, (tuple, list)):
        return type(value)(shrink_size(item) for item in value)
    if type(value) is not int or value < AUTO_SMALL_FROM:
        return value
    reduced = value
    while reduced % 2 == 0 and reduced // 2 >= AUTO_SMALL_MIN:
        reduced //= 2
    return reduced


def auto_small_profile(constants: dict[str, Any]) -> dict[str, Any]:
    """Smaller sizes for a KernelBench file without a ``small`` profile (for the CPU interpreter).

    Every integer constant of at least ``AUTO_SMALL_FROM`` is halved while it stays even and at
    least ``AUTO_SMALL_MIN`` (16384 -> 64, 1000 -> 125, 768 -> 96), so a power-of-two factor is
    removed from each size and sizes that divide one another (``embed_dim`` by ``num_heads``)
    mostly still do. Tuples and lists of sizes (``input_shape = (32768,)``) are reduced element by
    element; equal sizes stay equal, so shapes that must broadcast still do. Small constants
    (kernel sizes, strides, head counts) are left alone. The evaluator checks the reference on
    these sizes and falls back to ``full`` when it fails.
    """
    small: dict[str, Any] = {}
    for name, value in constants.items():
        reduced = shrink_size(value)
        if reduced != value:
            small[name] = reduced
    return small


def _changed(full: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    return {name: other[name] for name, value in full.items() if name in other and not _same_value(other[name], value)}


def _derived_small_profile(tree: ast.Module) -> dict[str, Any]:
    """:func:`auto_small_profile` for a file: constants written as numbers or arithmetic over
    numbers are shrunk, constants computed from other constants (``hidden = 4 * dim``,
    ``input_shape = (dim,)``) are recomputed from the shrunk values, so relations between sizes
    hold in the small profile as in the file."""
    steps = _constant_steps(tree)
    return _changed(_evaluate_steps(steps), _evaluate_steps(steps, shrink=True))


def _complete_profile(tree: ast.Module, overrides: dict[str, Any]) -> dict[str, Any]:
    """A ``TASK`` profile plus the constants computed from the ones it sets (``half = dim // 2``
    when it sets ``dim``): the profile's constants are set after the file has run, so a computed
    constant would otherwise keep its full-size value."""
    steps = _constant_steps(tree)
    derived = _changed(_evaluate_steps(steps), _evaluate_steps(steps, overrides=overrides))
    return {**overrides, **{name: value for name, value in derived.items() if name not in overrides}}


#: ``torch.<name>(...)`` calls that make one tensor, and tensor methods that return one.
_TENSOR_FACTORIES = frozenset(
    {
        "randn", "rand", "randint", "randperm", "zeros", "ones", "empty", "full", "arange", "linspace",
        "logspace", "eye", "tensor", "as_tensor", "from_numpy", "normal", "bernoulli", "multinomial",
        "randn_like", "rand_like", "randint_like", "zeros_like", "ones_like", "empty_like", "full_like",
    }
)  # fmt: skip
_TENSOR_METHODS = frozenset(
    {"cuda", "cpu", "to", "half", "float", "double", "bfloat16", "int", "long", "bool", "contiguous",
     "requires_grad_", "clone", "detach", "t", "view", "reshape", "permute", "transpose", "normal_", "uniform_"}
)  # fmt: skip


def _not_a_list(expr: ast.expr | None, assigned: dict[str, list[ast.expr]], depth: int = 0) -> str | None:
    """What ``expr`` evidently is when it is certainly not a list or tuple (``"a tensor"``,
    ``"None"``, ...); ``None`` when it is one or cannot be told from the source."""
    if expr is None or (isinstance(expr, ast.Constant) and expr.value is None):
        return "None"
    if isinstance(expr, ast.Constant):
        return f"a {type(expr.value).__name__}"
    if isinstance(expr, (ast.Dict, ast.DictComp)):
        return "a dict"
    if isinstance(expr, (ast.Set, ast.SetComp)):
        return "a set"
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
        func = expr.func
        if isinstance(func.value, ast.Name) and func.value.id == "torch" and func.attr in _TENSOR_FACTORIES:
            return "a tensor"
        if func.attr in _TENSOR_METHODS and _not_a_list(func.value, assigned, depth + 1) == "a tensor":
            return "a tensor"
    if isinstance(expr, ast.Name) and depth < 4 and expr.id in assigned:
        kinds = {_not_a_list(value, assigned, depth + 1) for value in assigned[expr.id]}
        if len(kinds) == 1 and None not in kinds:
            return kinds.pop()
    return None


def _bad_input_return(func: ast.FunctionDef) -> tuple[int, str] | None:
    """``(line, what)`` of a ``return`` in ``get_inputs`` / ``get_init_inputs`` that certainly does
    not return a list or tuple (``return torch.randn(4, 32)``), read from the source."""
    assigned: dict[str, list[ast.expr]] = {}
    returns: list[ast.Return] = []
    stack: list[ast.AST] = list(func.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue  # their returns and names are their own
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return None  # a generator: nothing to tell from the source
        if isinstance(node, ast.Return):
            returns.append(node)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            assigned.setdefault(node.targets[0].id, []).append(node.value)
            stack.append(node.value)
            continue
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            assigned.setdefault(node.id, []).append(ast.Name("?", ast.Load()))  # bound some other way
        stack.extend(ast.iter_child_nodes(node))
    if not returns:
        return (func.lineno, "None (it has no return statement)")  # reported at the def line
    for node in sorted(returns, key=lambda r: r.lineno):
        what = _not_a_list(node.value, assigned)
        if what is not None:
            return (node.lineno, what)
    return None


def _infer_level(path: Path | None) -> int:
    if path is None:
        return 1
    for part in reversed(path.parent.parts):
        match = LEVEL_DIR_RE.match(part)
        if match:
            return int(match.group(1))
    return 1


def _infer_category(name: str, source: str) -> str:
    words = set(re.split(r"[^a-z0-9]+", name.lower()))
    haystack = name.lower()
    for category, keys in CATEGORY_KEYWORDS:
        if any(key in words or (len(key) > 3 and key in haystack) for key in keys):
            return category
    return "other"


DTYPE_SPELLINGS: dict[str, tuple[str, ...]] = {
    "bfloat16": ("torch.bfloat16", ".bfloat16()"),
    "float16": ("torch.float16", "torch.half", ".half()"),
}


def _infer_dtype(source: str) -> str:
    """The lowest-precision floating type the file mentions (it sets the tolerance)."""
    for dtype, spellings in DTYPE_SPELLINGS.items():
        if any(spelling in source for spelling in spellings):
            return dtype
    return "float32"


def _infer_description(tree: ast.Module, name: str) -> str:
    doc = ast.get_docstring(tree)
    if not doc:
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name == "Model":
                doc = ast.get_docstring(node)
    if doc:
        return " ".join(doc.split())[:400]
    return name.replace("_", " ").strip()


def load_task_source(
    source: str,
    *,
    path: str | Path | None = None,
    suite: str | None = None,
    task_id: str | None = None,
    solution_path: str | Path | None = None,
) -> Task:
    """Build a :class:`Task` from a task file's text. Raises :class:`TaskLoadError` if malformed."""
    where = str(path) if path is not None else "<task source>"
    p = Path(path) if path is not None else None

    def fail(problem: str) -> TaskLoadError:
        return TaskLoadError(f"{where}: {problem}")

    source = source.removeprefix("\ufeff")  # a byte-order mark decoded as text
    try:
        tree = ast.parse(source, filename=where)
    except SyntaxError as exc:
        raise fail(f"not valid Python (line {exc.lineno}: {exc.msg})") from None

    top_names = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    for required, kind in (("Model", "class"), ("get_inputs", "function"), ("get_init_inputs", "function")):
        if required not in top_names:
            raise fail(
                f"missing top-level {kind} {required!r} (a KernelBench task defines Model, get_inputs, get_init_inputs)"
            )
    functions: dict[str, ast.FunctionDef] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            if not any(isinstance(m, ast.FunctionDef) and m.name == "forward" for m in node.body):
                raise fail("class 'Model' has no forward() method")
        if isinstance(node, ast.FunctionDef):
            functions[node.name] = node  # the last definition wins, as when the file runs
    for function in ("get_inputs", "get_init_inputs"):
        bad = _bad_input_return(functions[function]) if function in functions else None
        if bad is not None:
            raise fail(
                f"{function}() must return a list of inputs (the model is called as Model(*get_init_inputs()) "
                f"and model(*get_inputs())), but {function}() on line {bad[0]} returns {bad[1]}; "
                "return a list, e.g. return [x] (or return [] for no inputs)"
            )

    meta: dict[str, Any] = {}
    for node in tree.body:
        if _single_target(node) == "TASK":
            try:
                meta = ast.literal_eval(node.value)  # type: ignore[union-attr]
            except (ValueError, SyntaxError) as exc:
                raise fail(f"TASK must be a literal dict ({exc})") from None
            if not isinstance(meta, dict):
                raise fail(f"TASK must be a dict, got {type(meta).__name__}")
    unknown = set(meta) - KNOWN_TASK_KEYS
    if unknown:
        raise fail(f"TASK has unknown keys {sorted(unknown)}; known keys: {sorted(KNOWN_TASK_KEYS)}")

    constants = _module_constants(tree)
    profiles_meta = meta.get("profiles", {})
    if not isinstance(profiles_meta, dict):
        raise fail("TASK['profiles'] must be a dict of profile name -> {constant: value}")
    profiles: dict[str, dict[str, Any]] = {"full": {}}
    for profile_name, overrides in profiles_meta.items():
        if not isinstance(overrides, dict):
            raise fail(f"profile {profile_name!r} must be a dict of constant -> value")
        missing = set(overrides) - set(constants)
        if missing:
            raise fail(f"profile {profile_name!r} overrides {sorted(missing)}, which are not module-level constants")
        profiles[str(profile_name)] = _complete_profile(tree, dict(overrides))
    tags = tuple(str(tag) for tag in meta.get("tags", ()))
    if "small" not in profiles:
        derived = _derived_small_profile(tree)
        if derived:
            profiles["small"] = derived
            tags = (*tags, AUTO_SMALL_TAG)

    name = str(meta.get("name") or (p.stem if p is not None else "task"))
    level = meta.get("level", _infer_level(p))
    if not isinstance(level, int) or level < 1:
        raise fail(f"TASK['level'] must be a positive int, got {level!r}")
    dtype = str(meta.get("dtype", _infer_dtype(source)))
    if dtype not in DEFAULT_TOLERANCES:
        raise fail(f"TASK['dtype'] must be one of {sorted(DEFAULT_TOLERANCES)}, got {dtype!r}")
    atol_default, rtol_default = DEFAULT_TOLERANCES[dtype]
    atol, rtol = meta.get("atol", atol_default), meta.get("rtol", rtol_default)
    for label, value in (("atol", atol), ("rtol", rtol)):
        if not isinstance(value, (int, float)) or value < 0:
            raise fail(f"TASK[{label!r}] must be a non-negative number, got {value!r}")
    split = meta.get("split")
    if split is not None and split not in ("train", "test"):
        raise fail(f"TASK['split'] must be 'train' or 'test', got {split!r}")

    if task_id is None:
        task_id = str(meta.get("id") or (f"{suite}/L{level}/{name}" if suite else f"file/{name}"))
    return Task(
        id=task_id,
        name=name,
        level=level,
        category=str(meta.get("category") or _infer_category(name, source)),
        description=str(meta.get("description") or _infer_description(tree, name)),
        source=source,
        dtype=dtype,
        atol=float(atol),
        rtol=float(rtol),
        profiles=profiles,
        path=str(p.resolve()) if p is not None else None,
        suite=suite,
        split=split,
        solution_path=str(Path(solution_path).resolve()) if solution_path is not None else None,
        tags=tags,
    )


def load_task_file(path: str | Path, **kwargs: Any) -> Task:
    """Load one task file (a bundled task or any KernelBench-format file)."""
    p = Path(path)
    if not p.is_file():
        raise TaskLoadError(f"{p}: no such task file")
    try:
        source = read_python_source(p)
    except ValueError as exc:
        raise TaskLoadError(str(exc)) from None
    return load_task_source(source, path=p, **kwargs)
