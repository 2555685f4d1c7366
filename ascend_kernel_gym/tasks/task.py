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
Loading parses the file with :mod:`ast` only: no torch import, no code executed.
"""

from __future__ import annotations

import ast
import hashlib
import re
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
            raise KeyError(f"task {self.id!r} has no profile {profile!r}; it has {sorted(self.profiles)}")

    def solution_source(self) -> str | None:
        """The bundled reference solution's source, or ``None``."""
        if self.solution_path is None:
            return None
        return Path(self.solution_path).read_text()

    def prompt_source(self, profile: str = "full") -> str:
        """The reference as the agent should see it: no ``TASK`` block, constants set to ``profile``."""
        self.check_profile(profile)
        overrides = self.profiles[profile]
        tree = ast.parse(self.source)
        lines = self.source.splitlines(keepends=True)
        edits: list[tuple[int, int, str]] = []  # (first line, last line, replacement), 1-based
        for node in tree.body:
            target = _single_target(node)
            if target == "TASK":
                edits.append((node.lineno, node.end_lineno or node.lineno, ""))
            elif target in overrides:
                edits.append((node.lineno, node.end_lineno or node.lineno, f"{target} = {overrides[target]!r}\n"))
        for first, last, text in sorted(edits, reverse=True):
            lines[first - 1 : last] = [text] if text else []
        out = "".join(lines)
        return re.sub(r"\n{4,}", "\n\n\n", out).strip() + "\n"


def _single_target(node: ast.stmt) -> str | None:
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return node.target.id
    return None


def _module_constants(tree: ast.Module) -> dict[str, Any]:
    """Module-level ``NAME = <literal>`` assignments (KernelBench's size constants)."""
    constants: dict[str, Any] = {}
    for node in tree.body:
        name = _single_target(node)
        if name is None or name == "TASK" or node.value is None:  # type: ignore[union-attr]
            continue
        try:
            constants[name] = ast.literal_eval(node.value)  # type: ignore[union-attr]
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue
    return constants


#: tag of tasks whose ``small`` profile was derived by the loader (the file had none)
AUTO_SMALL_TAG = "auto-small-profile"
AUTO_SMALL_FROM = 128
AUTO_SMALL_MIN = 64


def auto_small_profile(constants: dict[str, Any]) -> dict[str, int]:
    """Smaller sizes for a KernelBench file without a ``small`` profile (for the CPU interpreter).

    Every integer constant of at least ``AUTO_SMALL_FROM`` is halved while it stays even and at
    least ``AUTO_SMALL_MIN`` (16384 -> 64, 1000 -> 125, 768 -> 96), so a power-of-two factor is
    removed from each size and sizes that divide one another (``embed_dim`` by ``num_heads``)
    mostly still do. Small constants (kernel sizes, strides, head counts) are left alone. The
    evaluator checks the reference on these sizes and falls back to ``full`` when it fails.
    """
    small: dict[str, int] = {}
    for name, value in constants.items():
        if type(value) is not int or value < AUTO_SMALL_FROM:
            continue
        reduced = value
        while reduced % 2 == 0 and reduced // 2 >= AUTO_SMALL_MIN:
            reduced //= 2
        if reduced != value:
            small[name] = reduced
    return small


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
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            if not any(isinstance(m, ast.FunctionDef) and m.name == "forward" for m in node.body):
                raise fail("class 'Model' has no forward() method")

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
        profiles[str(profile_name)] = dict(overrides)
    tags = tuple(str(tag) for tag in meta.get("tags", ()))
    if "small" not in profiles:
        derived = auto_small_profile(constants)
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
        source = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise TaskLoadError(f"{p}: not UTF-8 text ({exc})") from None
    return load_task_source(source, path=p, **kwargs)
