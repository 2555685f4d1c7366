"""Shape cases: the main shape of a task at a profile, and other shapes a kernel must handle.

:meth:`Task.shape_cases(profile, budget_elems) <ascend_kernel_gym.tasks.task.Task.shape_cases>`
lists them, main first; :func:`ascend_kernel_gym.tasks.runtime.instantiate` with ``case=`` runs
the task file at one of them. Where the cases come from, in order:

1. ``main``: the profile's sizes (and, for a ``get_input_groups()`` file, its first group, or on
   the ``small`` profile the first group within the task's element budget).
2. Declared cases: each line of a ``get_input_groups()`` file's JSON-lines data (``group<i>``),
   or our suites' ``TASK["cases"] = [{"name": "odd_rows", "N": 1000}, ...]`` (constants set on top
   of the profile; computed constants follow).
3. Derived cases, for files that declare none: ``odd`` (every size of at least 8 moved to a
   neighbour that no block size divides: even ``n -> n - 1``, odd ``n -> n + 2``; float init
   arguments the ``Model`` takes scaled by 1.5), ``batch`` (the batch size + 3, and every size
   equal to it) and ``half``
   (every size halved, at least 8). Sizes are module constants written as numbers and integer
   literals inside the input functions; constants computed from others (``hidden = 4 * dim``)
   are recomputed, and constants named like kernel sizes, strides, paddings, groups, head or
   layer counts are left alone, so the ratios the file's arithmetic encodes are kept. A case the
   reference rejects is the evaluator's to drop.

With a budget, a case above it is shrunk (its largest size halved until it fits) or, when it
cannot be, skipped; :attr:`ShapeCase.note` says which. Everything is deterministic.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Any, Protocol

from ascend_kernel_gym.tasks.constants import complete_profile, constant_steps, evaluate_steps, parse_literal_key
from ascend_kernel_gym.tasks.groups import InputGroup, input_groups, main_group
from ascend_kernel_gym.tasks.profiles import FIXED_NAME, SHRINK_FLOOR, Deriver, halve


class TaskView(Protocol):
    """What shape cases read of a :class:`~ascend_kernel_gym.tasks.task.Task`."""

    source: str
    profiles: dict[str, dict[str, Any]]
    cases: tuple[dict[str, Any], ...]
    files: tuple[tuple[str, str], ...]
    size_budget: int

    @property
    def uses_input_groups(self) -> bool: ...

    def check_profile(self, profile: str) -> None: ...

    def profile_note(self, profile: str) -> str: ...


#: smallest size a derived case changes
CASE_MIN_SIZE = 8
_BATCH_NAME = re.compile(r"batch|^bs$|^b$|^n$|num_samples", re.IGNORECASE)
_FIXED_FLOAT = re.compile(r"eps|momentum|^p$|prob|drop|temperature|margin|slope", re.IGNORECASE)


@dataclass(frozen=True)
class ShapeCase:
    """One shape a task is checked on.

    Attributes:
        name: ``main``, ``group<i>``, a declared case's name, or ``odd`` / ``batch`` / ``half``.
        overrides: module constants (and literal sizes) to set, like a profile: the whole set
            relative to the file, not to the profile.
        group: index into ``get_input_groups()`` (``None`` for files without groups).
        note: why it was shrunk, or what it is.
        elements: estimated elements of its inputs and parameters (``None``: unknown).
    """

    name: str
    overrides: dict[str, Any] = field(default_factory=dict)
    group: int | None = None
    note: str = ""
    elements: int | None = None


def main_case_group(task: TaskView, profile: str) -> int | None:
    """The ``get_input_groups()`` index the main case of ``profile`` uses (``None``: no groups)."""
    if not task.uses_input_groups:
        return None
    budget = task.size_budget if profile == "small" else None
    return main_group(input_groups(task.files), budget)[0]


def shape_cases(task: TaskView, profile: str, budget_elems: int | None = None, max_cases: int = 4) -> list[ShapeCase]:
    """The main case, then up to ``max_cases`` others (see the module docstring).

    Args:
        task: the task.
        profile: the profile whose sizes the main case has (``small``, ``full``).
        budget_elems: cap on each extra case's inputs and parameters (``None``: no cap). The main
            case is never dropped.
        max_cases: most extra cases returned.
    """
    task.check_profile(profile)
    base = dict(task.profiles[profile])
    tree = ast.parse(task.source)
    deriver = Deriver(tree)
    if task.uses_input_groups:
        return _group_cases(task, profile, base, budget_elems, max_cases)
    main = ShapeCase("main", base, None, task.profile_note(profile), _elements(deriver, base))
    if task.cases:
        candidates = [
            (
                str(c["name"]),
                complete_profile(tree, {**_written(tree, base), **{k: v for k, v in c.items() if k != "name"}}),
            )
            for c in task.cases
        ]
        candidates = [(name, {**_literals(base), **overrides}) for name, overrides in candidates]
    else:
        candidates = _derived(tree, deriver, base)
    out = [main]
    seen = [base]
    for name, overrides in candidates:
        case = _capped(deriver, tree, name, overrides, budget_elems)
        if case.overrides in seen:
            continue
        seen.append(case.overrides)
        out.append(case)
    extras = out[1:]
    kept = [c for c in extras if not c.note.startswith("skipped")][:max_cases]
    skipped = [c for c in extras if c.note.startswith("skipped")]
    if skipped:
        names = ", ".join(c.name for c in skipped)
        main = ShapeCase(
            main.name, main.overrides, main.group, _join(main.note, f"cases skipped: {names}"), main.elements
        )
    return [main, *kept]


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


def _constants(overrides: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in overrides.items() if parse_literal_key(k) is None}


def _written(tree: ast.Module, base: dict[str, Any]) -> dict[str, Any]:
    """The profile's constants that the file writes as numbers: a case sets its sizes on top of
    these, and the constants computed from them (``half = dim // 2``) are computed again."""
    names: set[str] = set()

    def record(name: str, value: Any) -> Any:
        names.add(name)
        return value

    evaluate_steps(constant_steps(tree), shrink=record)
    return {k: v for k, v in _constants(base).items() if k in names}


def _literals(overrides: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in overrides.items() if parse_literal_key(k) is not None}


def _elements(deriver: Deriver, overrides: dict[str, Any]) -> int | None:
    constants = evaluate_steps(deriver.steps, overrides=_constants(overrides))
    estimate = deriver.estimate(constants, deriver.literals_with(overrides, False, {}))
    return estimate.total if estimate.complete else None


def _is_odd_shape(group: InputGroup) -> bool:
    return any(size % 16 for shape in group.shapes for size in shape)


def _group_cases(
    task: TaskView, profile: str, base: dict[str, Any], budget: int | None, max_cases: int
) -> list[ShapeCase]:
    groups = input_groups(task.files)
    main_budget = task.size_budget if profile == "small" else None
    index, why = main_group(groups, main_budget)
    if groups is None:
        note = "get_input_groups() builds its groups in code: only group 0 is used"
        return [ShapeCase("main", base, 0, _join(task.profile_note(profile), note), None)]
    main = ShapeCase("main", base, index, _join(why, groups[index].describe()), groups[index].elements)
    eligible: list[InputGroup] = []
    skipped = 0
    for group in groups:
        if group.index == index:
            continue
        if budget is not None and (group.elements is None or group.elements > budget):
            skipped += 1
            continue
        eligible.append(group)
    # odd shapes first (they catch the most), then the smallest, in file order
    eligible.sort(key=lambda g: (not _is_odd_shape(g), g.elements if g.elements is not None else 0, g.index))
    chosen = sorted(eligible[:max_cases], key=lambda g: g.index)
    if skipped:
        main = ShapeCase(
            "main",
            main.overrides,
            main.group,
            _join(main.note, f"{skipped} of {len(groups)} groups above the budget of {budget:,} elements skipped"),
            main.elements,
        )
    cases = [ShapeCase(f"group{g.index}", base, g.index, g.describe(), g.elements) for g in chosen]
    return [main, *cases]


def _size_names(tree: ast.Module, base: dict[str, Any]) -> tuple[dict[str, Any], set[str]]:
    """Constants a derived case may change (written as numbers, not named like a fixed quantity)
    with their values at the profile, and the names passed to the model's constructor."""
    written: dict[str, Any] = {}

    def record(name: str, value: Any) -> Any:
        if not FIXED_NAME.search(name):
            written[name] = value
        return value

    evaluate_steps(constant_steps(tree), shrink=record)
    values = evaluate_steps(constant_steps(tree), overrides=_constants(base))
    init_names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "get_init_inputs":
            init_names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    return {name: values[name] for name in written if name in values}, init_names


def _batch_name(tree: ast.Module, sizes: dict[str, Any]) -> str | None:
    named = [name for name in sizes if _BATCH_NAME.search(name) and type(sizes[name]) is int]
    if named:
        return named[0]
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "get_inputs":
            for call in ast.walk(node):
                if isinstance(call, ast.Call) and call.args and isinstance(call.args[0], ast.Name):
                    name = call.args[0].id
                    if name in sizes and type(sizes[name]) is int:
                        return name
    return None


def _odd(value: int) -> int:
    return value - 1 if value % 2 == 0 else value + 2


def _map_sizes(value: Any, change: Any) -> Any:
    if type(value) is int:
        return change(value) if value >= CASE_MIN_SIZE else value
    if isinstance(value, (tuple, list)):
        return type(value)(_map_sizes(v, change) for v in value)
    return value


def _derived(tree: ast.Module, deriver: Deriver, base: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    sizes, init_names = _size_names(tree, base)
    literals = {key: base.get(key, value) for key, (value, _kw) in deriver.sizes.sites.items()}
    out: list[tuple[str, dict[str, Any]]] = []

    def case(name: str, change: Any, names: list[str] | None, floats: bool) -> None:
        constants = _written(tree, base)
        for key in names if names is not None else list(sizes):
            value = sizes[key]
            if isinstance(value, float) and floats and key in init_names and not _FIXED_FLOAT.search(key) and value:
                constants[key] = value * 1.5
            else:
                new = _map_sizes(value, change(key))
                if new != value:
                    constants[key] = new
        overrides = complete_profile(tree, constants)
        if names is None:
            overrides.update({k: _map_sizes(v, change(k)) for k, v in literals.items()})
        else:
            overrides.update(_literals(base))
        out.append((name, overrides))

    divisors = _divisors(tree, base)

    def odd(key: str) -> Any:
        def change(value: int) -> int:
            # a size the model takes that a head or group count divides stays a multiple of it
            # (256 -> 248 with 8 heads): still no block size's multiple, the reshapes still work
            for d in divisors if key in init_names else []:
                if value % d == 0 and value > d:
                    return value - d
            return _odd(value)

        return change

    case("odd", odd, None, True)
    batch = _batch_name(tree, sizes)
    if batch is not None:  # sizes equal to the batch size move with it (a shape tuple that must match it)
        value = sizes[batch]
        case("batch", lambda _key: lambda v: v + 3 if v == value else v, None, False)
    case("half", lambda _key: lambda v: max(CASE_MIN_SIZE, v // 2), None, False)
    return out


_DIVISOR_NAME = re.compile(r"head|group", re.IGNORECASE)


def _divisors(tree: ast.Module, base: dict[str, Any]) -> list[int]:
    """Head and group counts of the file (at the profile): sizes they divide must stay multiples."""
    values = evaluate_steps(constant_steps(tree), overrides=_constants(base))
    found = {v for k, v in values.items() if _DIVISOR_NAME.search(k) and type(v) is int and v >= 2}
    return sorted(found, reverse=True)


def _capped(deriver: Deriver, tree: ast.Module, name: str, overrides: dict[str, Any], budget: int | None) -> ShapeCase:
    elements = _elements(deriver, overrides)
    if budget is None or (elements is not None and elements <= budget):
        return ShapeCase(name, overrides, None, "", elements)
    if elements is None:
        return ShapeCase(name, overrides, None, "skipped: its size cannot be read from the source", None)
    written = set(_size_names(tree, {})[0])  # constants written as numbers: the others are recomputed
    current = {k: v for k, v in overrides.items() if k in written or parse_literal_key(k) is not None}
    first = elements
    while elements is not None and elements > budget:
        sizes = [v for value in current.values() for v in _ints(value) if v > SHRINK_FLOOR]
        if not sizes:
            break
        largest = max(sizes)
        current = {k: _map_sizes(v, lambda x, big=largest: halve(x) if x == big else x) for k, v in current.items()}
        elements = _elements(deriver, {**complete_profile(tree, _constants(current)), **_literals(current)})
    if elements is None or elements > budget:
        return ShapeCase(name, overrides, None, f"skipped: {first:,} elements, cannot be shrunk to {budget:,}", None)
    shrunk = {**complete_profile(tree, _constants(current)), **_literals(current)}
    return ShapeCase(name, shrunk, None, f"shrunk to the budget: {first:,} -> {elements:,} elements", elements)


def _ints(value: Any) -> list[int]:
    if type(value) is int:
        return [value]
    if isinstance(value, (tuple, list)):
        return [i for v in value for i in _ints(v)]
    return []
