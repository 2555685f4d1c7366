"""The ``small`` profile of a task file that has none: sizes derived to an element budget.

Two steps, both on the file's AST (nothing runs):

1. Every integer size of at least ``AUTO_SMALL_FROM`` loses power-of-two factors while it stays at
   least ``AUTO_SMALL_MIN`` (:func:`shrink_size`: 16384 -> 64, 1000 -> 125, 768 -> 96). Sizes
   that divide one another mostly still do, and equal sizes stay equal.
2. While the estimated elements of the inputs and parameters (:mod:`.sizes`) exceed the budget
   (:data:`DEFAULT_SMALL_BUDGET`, or ``AKG_SMALL_BUDGET``, or the loader's ``small_budget``), the
   largest size left is halved everywhere it occurs (an odd size stays odd: 8205 -> 4103), down
   to :data:`SHRINK_FLOOR`. Sizes below :data:`SHRINK_FROM` and constants named like kernel
   sizes, strides, paddings, groups, head or layer counts are never changed by this step.

A size is a module constant written without names (``N = 8205``, ``h, w = 128, 128``,
``input_shape = (4096, 7)``; constants computed from others are recomputed) or an integer
literal inside ``get_inputs`` / ``get_init_inputs`` / ``Model.__init__`` defaults
(:func:`~ascend_kernel_gym.tasks.constants.literal_key`). When the budget cannot be reached the
profile is the smallest the loader could make and :attr:`DerivedProfile.note` says why.
"""

from __future__ import annotations

import ast
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ascend_kernel_gym.tasks.constants import changed, constant_steps, evaluate_steps
from ascend_kernel_gym.tasks.sizes import SizeEstimate, SizeModel

#: tag of tasks whose ``small`` profile was derived by the loader (the file had none)
AUTO_SMALL_TAG = "auto-small-profile"
AUTO_SMALL_FROM = 128
AUTO_SMALL_MIN = 64
#: elements (inputs and parameters together) a derived ``small`` profile aims at
DEFAULT_SMALL_BUDGET = 1_000_000
#: environment variable that sets the budget (an integer number of elements)
BUDGET_ENV = "AKG_SMALL_BUDGET"
#: the budget step never makes a size smaller than this ...
SHRINK_FLOOR = 8
#: ... and never changes a size smaller than this (kernel sizes, strides, small channel counts)
SHRINK_FROM = 16
#: constants the budget step leaves alone: their value is not a size of the data
FIXED_NAME = re.compile(
    r"kernel|stride|pad|dilat|group|head|layer|axis|eps|seed|momentum|top_?k|bits|^p$", re.IGNORECASE
)


def small_budget(default: int | None = None) -> int:
    """The element budget: ``default`` when given, else ``$AKG_SMALL_BUDGET``, else 1,000,000."""
    if default is not None:
        return int(default)
    text = os.environ.get(BUDGET_ENV, "").strip().replace("_", "")
    if text.isdigit() and int(text) > 0:
        return int(text)
    return DEFAULT_SMALL_BUDGET


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
    """Step 1 alone on a dict of constants: the ones :func:`shrink_size` changes, changed."""
    small: dict[str, Any] = {}
    for name, value in constants.items():
        reduced = shrink_size(value)
        if reduced != value:
            small[name] = reduced
    return small


def halve(value: int, floor: int = SHRINK_FLOOR) -> int:
    """Half of a size, odd sizes staying odd (8205 -> 4103), never below ``floor``."""
    half = value // 2 if value % 2 == 0 else (value // 2) | 1
    return max(half, min(floor, value))


@dataclass(frozen=True)
class DerivedProfile:
    """A profile derived to a budget, with the sizes before and after."""

    overrides: dict[str, Any]
    before: SizeEstimate
    after: SizeEstimate
    budget: int
    #: the estimate is complete and within the budget
    fits: bool
    #: one line for people (``akg tasks show``) and results: what was done, or why it does not fit
    note: str


def _map_ints(value: Any, mapping: Callable[[int], int]) -> Any:
    if type(value) is int:
        return mapping(value)
    if isinstance(value, (tuple, list)):
        return type(value)(_map_ints(item, mapping) for item in value)
    return value


def _ints(value: Any) -> list[int]:
    if type(value) is int:
        return [value]
    if isinstance(value, (tuple, list)):
        return [i for item in value for i in _ints(item)]
    return []


class Deriver:
    """Evaluates and shrinks one file's sizes (the constants and the literal sites)."""

    def __init__(self, tree: ast.Module, sizes: SizeModel | None = None) -> None:
        self.steps = constant_steps(tree)
        self.sizes = sizes or SizeModel(tree)
        self.full = evaluate_steps(self.steps)

    def constants_with(self, base: dict[str, Any], step1: bool, step2: dict[int, int]) -> dict[str, Any]:
        """The module constants with ``base`` set and the two shrink steps applied to the rest."""

        def shrink(name: str, value: Any) -> Any:
            if step1:
                value = shrink_size(value)
            if step2 and not FIXED_NAME.search(name):
                value = _map_ints(value, lambda v: step2.get(v, v))
            return value

        return evaluate_steps(self.steps, shrink=shrink, overrides=base)

    def literals_with(self, base: dict[str, Any], step1: bool, step2: dict[int, int]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, (value, _keyword) in self.sizes.sites.items():
            if key in base:
                out[key] = base[key]
                continue
            new = shrink_size(value) if step1 else value
            out[key] = step2.get(new, new)
        return out

    def shrinkable_values(self, base: dict[str, Any], step1: bool) -> set[int]:
        """Values (after step 1) the budget step may halve."""
        seen: dict[str, Any] = {}

        def record(name: str, value: Any) -> Any:
            value = shrink_size(value) if step1 else value
            if not FIXED_NAME.search(name):
                seen[name] = value
            return value

        evaluate_steps(self.steps, shrink=record, overrides=base)
        values = {v for value in seen.values() for v in _ints(value)}
        for key, (value, _keyword) in self.sizes.sites.items():
            if key not in base:
                values.add(shrink_size(value) if step1 else value)
        return {v for v in values if v >= SHRINK_FROM}

    def estimate(self, constants: dict[str, Any], literals: dict[str, Any]) -> SizeEstimate:
        return self.sizes.estimate(constants, literals)

    def derive(self, budget: int, base: dict[str, Any] | None = None, step1: bool = True) -> DerivedProfile:
        """Sizes within ``budget``, starting from the file's (or ``base``'s) values."""
        base = dict(base or {})
        start_constants = evaluate_steps(self.steps, overrides=base)
        start_literals = self.literals_with(base, False, {})
        before = self.estimate(start_constants, start_literals)
        step2: dict[int, int] = {}
        candidates = self.shrinkable_values(base, step1)
        current = {v: v for v in candidates}
        while True:
            constants = self.constants_with(base, step1, step2)
            literals = self.literals_with(base, step1, step2)
            after = self.estimate(constants, literals)
            if after.total <= budget:
                break
            movable = [v for v, now in current.items() if now > SHRINK_FLOOR]
            if not movable:
                break
            largest = max(current[v] for v in movable)
            for v in movable:
                if current[v] == largest:
                    current[v] = halve(largest)
                    step2[v] = current[v]
        overrides = changed(self.full, constants)
        overrides.update({k: v for k, v in base.items()})
        for key, value in literals.items():
            if value != self.sizes.sites[key][0]:
                overrides[key] = value
        fits = after.total <= budget and after.complete
        return DerivedProfile(overrides, before, after, budget, fits, _note(before, after, budget, overrides))


def _note(before: SizeEstimate, after: SizeEstimate, budget: int, overrides: dict[str, Any]) -> str:
    unknown = ""
    if after.unknown:
        unknown = f"; not counted (cannot be read from the source): {'; '.join(after.unknown[:3])}"
    if after.total > budget:
        if after.parameters > budget or after.parameters >= after.inputs:
            why = (
                f"the parameters alone have {after.parameters:,} elements at the smallest sizes the loader can set "
                "(layer sizes written inside the model, or tied to sizes that reached their floor)"
            )
        else:
            why = (
                f"the inputs still have {after.inputs:,} elements with every size the loader can change at its floor "
                f"({SHRINK_FLOOR}) or left alone (kernel sizes, strides, head counts, sizes below {SHRINK_FROM})"
            )
        return (
            f"cannot be shrunk to the budget: {before.total:,} -> {after.total:,} elements, budget {budget:,}; "
            f"{why}{unknown}"
        )
    if after.unknown:
        counted = f"{after.total:,} elements counted" if overrides else f"the file's own sizes, {after.total:,} counted"
        return (
            f"size not fully known from the source ({counted}, budget {budget:,}): "
            f"{'; '.join(after.unknown[:3])}; `akg tasks show --measure` counts it exactly"
        )
    if not overrides:
        return f"the file's own sizes: {after.total:,} elements, within the budget of {budget:,}"
    return f"derived: {before.total:,} -> {after.total:,} elements (budget {budget:,})"


def derive_small_profile(tree: ast.Module, budget: int | None = None, sizes: SizeModel | None = None) -> DerivedProfile:
    """The ``small`` profile of a file without one (steps 1 and 2 of the module docstring)."""
    return Deriver(tree, sizes).derive(small_budget(budget))


def small_fallbacks(tree: ast.Module, budget: int | None = None) -> list[dict[str, Any]]:
    """Larger ``small`` profiles to try, in order, when the reference rejects the derived one (a
    kernel larger than a shrunk image, a size another one must divide): the derivation at 8x and
    64x the budget, then step 1 alone. Distinct from each other and from the derived profile."""
    limit = small_budget(budget)
    deriver = Deriver(tree)
    seen = [deriver.derive(limit).overrides]
    out: list[dict[str, Any]] = []
    for candidate in (
        deriver.derive(limit * 8).overrides,
        deriver.derive(limit * 64).overrides,
        deriver.derive(sys.maxsize).overrides,
    ):
        if candidate not in seen:
            seen.append(candidate)
            out.append(candidate)
    return out


def estimate_profile(tree: ast.Module, overrides: dict[str, Any]) -> SizeEstimate:
    """The AST estimate of a file's elements with a profile's constants and literal sizes set."""
    deriver = Deriver(tree)
    constants = evaluate_steps(deriver.steps, overrides={k: v for k, v in overrides.items() if "@" not in k})
    return deriver.estimate(constants, deriver.literals_with(overrides, False, {}))


def check_profile_size(tree: ast.Module, overrides: dict[str, Any], budget: int | None = None) -> str:
    """A note on a profile the file declares: its size, and whether it is within the budget."""
    limit = small_budget(budget)
    estimate = estimate_profile(tree, overrides)
    state = "within" if estimate.total <= limit else "above"
    partial = f" (not counted: {'; '.join(estimate.unknown[:2])})" if estimate.unknown else ""
    return f"declared by the file: {estimate.total:,} elements, {state} the budget of {limit:,}{partial}"
