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
import functools
import hashlib
import io
import re
import tokenize
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ascend_kernel_gym.tasks.cases import ShapeCase, shape_cases
from ascend_kernel_gym.tasks.constants import complete_profile, module_constants, single_target
from ascend_kernel_gym.tasks.groups import groups_note, input_groups, main_group, read_files, referenced_files
from ascend_kernel_gym.tasks.profiles import AUTO_SMALL_TAG as AUTO_SMALL_TAG
from ascend_kernel_gym.tasks.profiles import (
    DEFAULT_SMALL_BUDGET,
    check_profile_size,
    derive_small_profile,
    estimate_profile,
    small_budget,
)
from ascend_kernel_gym.tasks.profiles import auto_small_profile as auto_small_profile
from ascend_kernel_gym.tasks.profiles import shrink_size as shrink_size
from ascend_kernel_gym.tasks.rewrite import apply_profile

DEFAULT_TOLERANCES: dict[str, tuple[float, float]] = {
    # dtype: (atol, rtol); KernelBench uses 1e-4 for fp32 and 1e-2 for half types.
    "float32": (1e-4, 1e-4),
    "float16": (1e-2, 1e-2),
    "bfloat16": (2e-2, 2e-2),
}
LEVEL_DIR_RE = re.compile(r"^(?:level|l)[_-]?(\d+)$", re.IGNORECASE)
KNOWN_TASK_KEYS = frozenset(
    {"id", "name", "level", "category", "description", "dtype", "atol", "rtol", "profiles", "split", "tags", "cases"}
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
        files: ``(name, text)`` of the data files the task file reads beside itself (the JSON-lines
            cases of a ``get_input_groups()`` file), carried inside the task.
        cases: shape cases the file declares (``TASK["cases"]``): each a dict with ``name`` and
            the module constants it sets.
        profile_notes: profile name -> how its sizes were obtained and whether they fit the budget.
        profile_elements: profile name -> the loader's estimate of its elements (inputs and
            parameters; for a ``get_input_groups()`` file the main group's inputs), ``None`` when
            the source does not tell (:mod:`.measure` counts exactly).
        size_budget: the element budget (inputs and parameters) of the ``small`` profile.
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
    files: tuple[tuple[str, str], ...] = ()
    cases: tuple[dict[str, Any], ...] = ()
    profile_notes: dict[str, str] = field(default_factory=dict)
    profile_elements: dict[str, int | None] = field(default_factory=dict)
    size_budget: int = DEFAULT_SMALL_BUDGET

    def __hash__(self) -> int:
        return hash((self.id, self.source_hash))

    @property
    def source_hash(self) -> str:
        """SHA-256 of the source and of the data files it carries (the source alone when none)."""
        digest = hashlib.sha256(self.source.encode())
        for name, text in self.files:
            digest.update(b"\0" + name.encode() + b"\0" + text.encode())
        return digest.hexdigest()

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
        """The reference as the agent should see it: no ``TASK`` block, sizes set to ``profile``
        (:func:`~ascend_kernel_gym.tasks.rewrite.apply_profile`): a constant the profile changes has
        its value replaced (``N = 2048 * 2`` becomes ``N = 64``, comments on the line are kept); a
        constant computed from others (``half = N // 2``) keeps its expression when that gives the
        profile's value; a literal size inside a function is replaced in place.
        """
        self.check_profile(profile)
        return apply_profile(self.source, self.profiles[profile])

    def profile_note(self, profile: str) -> str:
        """How the profile's sizes were obtained and whether they fit the budget (empty if unknown)."""
        return self.profile_notes.get(profile, "")

    def within_budget(self, profile: str = "small") -> bool | None:
        """Whether the profile's estimated elements fit :attr:`size_budget` (``None``: unknown)."""
        elements = self.profile_elements.get(profile)
        return None if elements is None else elements <= self.size_budget

    @property
    def uses_input_groups(self) -> bool:
        """The file defines ``get_input_groups()`` (one input list per case) and no ``get_inputs()``."""
        return _uses_input_groups(self.source)

    def shape_cases(self, profile: str, budget_elems: int | None = None, max_cases: int = 4) -> list[ShapeCase]:
        """The shapes a kernel is checked on at ``profile``: the main one first, then declared or
        derived ones, capped to ``budget_elems`` (see :func:`ascend_kernel_gym.tasks.cases.shape_cases`)."""
        return shape_cases(self, profile, budget_elems=budget_elems, max_cases=max_cases)


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


@functools.lru_cache(maxsize=256)
def _uses_input_groups(source: str) -> bool:
    names = {n.name for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)}
    return "get_input_groups" in names and "get_inputs" not in names


def _declared_cases(
    raw: Any, constants: dict[str, Any], fail: Callable[[str], TaskLoadError]
) -> tuple[dict[str, Any], ...]:
    """``TASK["cases"]``: a list of ``{"name": str, <constant>: value, ...}``."""
    if not isinstance(raw, (list, tuple)):
        raise fail('TASK["cases"] must be a list of {"name": ..., <constant>: value} dicts')
    cases: list[dict[str, Any]] = []
    names: set[str] = set()
    for case in raw:
        if not isinstance(case, dict) or not isinstance(case.get("name"), str) or not case["name"]:
            raise fail(f'each TASK["cases"] entry must be a dict with a "name", got {case!r}')
        if case["name"] in names or case["name"] == "main":
            raise fail(f'TASK["cases"] names must be unique and not "main", got {case["name"]!r} twice or reserved')
        names.add(case["name"])
        missing = set(case) - {"name"} - set(constants)
        if missing:
            raise fail(f"case {case['name']!r} sets {sorted(missing)}, which are not module-level constants")
        cases.append(dict(case))
    return tuple(cases)


def load_task_source(
    source: str,
    *,
    path: str | Path | None = None,
    suite: str | None = None,
    task_id: str | None = None,
    solution_path: str | Path | None = None,
    data_files: dict[str, str] | None = None,
    small_budget_elems: int | None = None,
) -> Task:
    """Build a :class:`Task` from a task file's text. Raises :class:`TaskLoadError` if malformed.

    Args:
        source: the task file's text.
        path: where it was read from (names the task, finds the data files it reads beside itself).
        suite: the suite it belongs to.
        task_id: its id (default ``<suite>/L<level>/<name>`` or ``file/<name>``).
        solution_path: a bundled reference solution.
        data_files: ``{name: text}`` of the data files it reads (default: read from beside ``path``).
        small_budget_elems: element budget of a derived ``small`` profile (default
            :func:`~ascend_kernel_gym.tasks.profiles.small_budget`).
    """
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
    grouped = "get_inputs" not in top_names and "get_input_groups" in top_names
    for required, kind in (("Model", "class"), ("get_inputs", "function"), ("get_init_inputs", "function")):
        if required not in top_names and not (required == "get_inputs" and grouped):
            raise fail(
                f"missing top-level {kind} {required!r} (a KernelBench task defines Model, get_inputs, "
                "get_init_inputs; a MultiKernelBench one may define get_input_groups instead of get_inputs)"
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
        if single_target(node) == "TASK":
            try:
                meta = ast.literal_eval(node.value)  # type: ignore[union-attr]
            except (ValueError, SyntaxError) as exc:
                raise fail(f"TASK must be a literal dict ({exc})") from None
            if not isinstance(meta, dict):
                raise fail(f"TASK must be a dict, got {type(meta).__name__}")
    unknown = set(meta) - KNOWN_TASK_KEYS
    if unknown:
        raise fail(f"TASK has unknown keys {sorted(unknown)}; known keys: {sorted(KNOWN_TASK_KEYS)}")

    constants = module_constants(tree)
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
        profiles[str(profile_name)] = complete_profile(tree, dict(overrides))
    cases = _declared_cases(meta.get("cases", ()), constants, fail)
    files: tuple[tuple[str, str], ...] = tuple(sorted((data_files or {}).items()))
    if p is not None and data_files is None:
        try:
            files, missing_files = read_files(p.parent, referenced_files(tree, p.stem))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise fail(f"cannot read a data file it names: {exc}") from None
        if missing_files and grouped:
            raise fail(f"get_input_groups() reads {', '.join(missing_files)}, which is not beside the task file")
    budget = small_budget(small_budget_elems)
    tags = tuple(str(tag) for tag in meta.get("tags", ()))
    notes: dict[str, str] = {}
    if "small" in profiles:
        notes["small"] = check_profile_size(tree, profiles["small"], budget)
    elif grouped:
        profiles["small"] = {}
        tags = (*tags, AUTO_SMALL_TAG)
        notes["small"] = groups_note(files, budget)
    else:
        derived = derive_small_profile(tree, budget)
        profiles["small"] = derived.overrides
        tags = (*tags, AUTO_SMALL_TAG)
        notes["small"] = derived.note
    elements: dict[str, int | None] = {}
    for profile_name, overrides in profiles.items():
        if grouped:
            groups = input_groups(files)
            index = main_group(groups, budget if profile_name == "small" else None)[0]
            elements[profile_name] = groups[index].elements if groups else None
        else:
            estimate = estimate_profile(tree, overrides)
            elements[profile_name] = estimate.total if estimate.complete else None

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
        files=files,
        cases=cases,
        profile_notes=notes,
        profile_elements=elements,
        size_budget=budget,
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
