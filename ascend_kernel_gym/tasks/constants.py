"""Module-level constants of a task file, read from its AST (the file is never run for this).

A constant is ``NAME = <expression>`` (or ``a, b = 1, 2``) at the top level, where the expression
is a literal, arithmetic over literals and earlier constants (``N = 2048 * 2``), or a tuple / list
of those (``input_shape = (dim,)``). :func:`constant_steps` lists the module's bindings in order,
:func:`evaluate_steps` runs them (optionally changing the constants written without names), so a
constant computed from others (``half = dim // 2``) follows the values it is computed from.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any


def same_value(a: Any, b: Any) -> bool:
    """Equal and of the same type (``1 == 1.0 == True`` are three different constants)."""
    return type(a) is type(b) and a == b


def single_target(node: ast.stmt) -> str | None:
    """``NAME`` of ``NAME = value`` / ``NAME: T = value``, else ``None``."""
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return node.target.id
    return None


def tuple_targets(node: ast.stmt) -> list[tuple[str, ast.expr]] | None:
    """``[(name, value), ...]`` of ``a, b = 1, 2`` (names and values paired one to one, no value
    naming one of the targets, so evaluating them in order is what the assignment does)."""
    if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
        return None
    target, value = node.targets[0], node.value
    if not (isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List))):
        return None
    if len(target.elts) != len(value.elts) or not all(isinstance(t, ast.Name) for t in target.elts):
        return None
    if any(isinstance(v, ast.Starred) for v in value.elts):
        return None
    names = [t.id for t in target.elts]  # type: ignore[attr-defined]
    used = {n.id for v in value.elts for n in ast.walk(v) if isinstance(n, ast.Name)}
    if used & set(names) or len(set(names)) != len(names):
        return None
    return list(zip(names, value.elts, strict=True))


class NotConstantError(Exception):
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
        raise NotConstantError("integer too large")
    if isinstance(value, float) and not math.isfinite(value):
        raise NotConstantError("not finite")
    if isinstance(value, (tuple, list)) and len(value) > _MAX_SEQUENCE:
        raise NotConstantError("sequence too long")
    return value


def eval_constant(node: ast.expr, env: dict[str, Any]) -> tuple[Any, bool]:
    """Evaluate a module-level constant expression without executing the file.

    Literals (numbers, strings, ``None``), ``+ - * / // % **`` and unary ``-``/``+`` over numbers,
    tuples and lists of those (``*name`` unpacking, ``+`` concatenation) and references to the
    constants in ``env``. Returns ``(value, uses_names)``; raises :class:`NotConstantError` otherwise.
    """
    uses_names = False

    def ev(n: ast.expr) -> Any:
        nonlocal uses_names
        if isinstance(n, ast.Constant):
            if isinstance(n.value, (int, float, str, bytes, bool)) or n.value is None:
                return _checked(n.value)
            raise NotConstantError(type(n.value).__name__)
        if isinstance(n, ast.Name):
            if n.id not in env:
                raise NotConstantError(n.id)
            uses_names = True
            return env[n.id]
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, (ast.USub, ast.UAdd)):
            operand = ev(n.operand)
            if not _is_number(operand):
                raise NotConstantError("unary operand")
            return _checked(-operand if isinstance(n.op, ast.USub) else +operand)
        if isinstance(n, ast.BinOp) and type(n.op) in _BINARY_OPS:
            left, right = ev(n.left), ev(n.right)
            if isinstance(n.op, ast.Add) and type(left) is type(right) and isinstance(left, (tuple, list)):
                return _checked(left + right)
            if not (_is_number(left) and _is_number(right)):
                raise NotConstantError("operands")
            if isinstance(n.op, ast.Pow) and isinstance(left, int) and isinstance(right, int) and right > 0:
                if max(abs(left).bit_length() - 1, 0) * right > _MAX_INT_BITS:
                    raise NotConstantError("power too large")
            try:
                return _checked(_BINARY_OPS[type(n.op)](left, right))
            except (ArithmeticError, ValueError) as exc:  # 1 / 0, overflow, negative ** fraction
                raise NotConstantError(str(exc)) from None
        if isinstance(n, (ast.Tuple, ast.List)):
            items: list[Any] = []
            for element in n.elts:
                if isinstance(element, ast.Starred):
                    inner = ev(element.value)
                    if not isinstance(inner, (tuple, list)):
                        raise NotConstantError("starred")
                    items.extend(inner)
                else:
                    items.append(ev(element))
            return _checked(tuple(items) if isinstance(n, ast.Tuple) else items)
        raise NotConstantError(type(n).__name__)

    return ev(node), uses_names


def is_main_guard(node: ast.stmt) -> bool:
    """``if __name__ == "__main__":`` (its body does not run when the task file is loaded)."""
    if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare) or len(node.test.ops) != 1:
        return False
    sides = [node.test.left, *node.test.comparators]
    names = [s.id for s in sides if isinstance(s, ast.Name)]
    values = [s.value for s in sides if isinstance(s, ast.Constant)]
    return isinstance(node.test.ops[0], ast.Eq) and names == ["__name__"] and values == ["__main__"]


def rebound_names(node: ast.stmt) -> set[str]:
    """Module-level names a statement (other than ``NAME = value``) binds or deletes."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    if is_main_guard(node):
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


def constant_steps(tree: ast.Module) -> list[tuple[str, ast.expr | None]]:
    """The module's top-level bindings in order: ``(name, expression)`` for ``NAME = expression``
    and for each name of ``a, b = 1, 2``; ``(name, None)`` for anything else that rebinds ``name``
    (it is no longer a known constant). ``TASK`` is left out."""
    steps: list[tuple[str, ast.expr | None]] = []
    for node in tree.body:
        name = single_target(node)
        if name is not None:
            value = node.value  # type: ignore[union-attr]
            if value is not None and name != "TASK":
                steps.append((name, value))
            continue
        pairs = tuple_targets(node)
        if pairs is not None:
            steps.extend(pairs)
            continue
        steps.extend((rebound, None) for rebound in sorted(rebound_names(node)))
    return steps


def evaluate_steps(
    steps: list[tuple[str, ast.expr | None]],
    shrink: Callable[[str, Any], Any] | None = None,
    overrides: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Run the constant assignments in order.

    Args:
        steps: from :func:`constant_steps`.
        shrink: applied as ``shrink(name, value)`` to every constant written without names
            (``16384``, ``2048 * 2``, ``(32768,)``); constants computed from other constants
            (``half = dim // 2``) are recomputed from the values so set.
        overrides: constants that take this value (and are never shrunk).
    """
    env: dict[str, Any] = {}
    for name, expr in steps:
        if expr is None:
            env.pop(name, None)
            continue
        if overrides is not None and name in overrides:
            env[name] = overrides[name]
            continue
        try:
            value, uses_names = eval_constant(expr, env)
        except NotConstantError:
            try:  # other literals (dicts, sets, complex numbers): kept, never shrunk
                value, uses_names = ast.literal_eval(expr), True
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                env.pop(name, None)
                continue
        except RecursionError:
            env.pop(name, None)
            continue
        env[name] = shrink(name, value) if shrink is not None and not uses_names else value
    return env


def module_constants(tree: ast.Module) -> dict[str, Any]:
    """Module-level constants (KernelBench's size constants), with their values as the file
    computes them."""
    return evaluate_steps(constant_steps(tree))


def changed(full: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    """The constants of ``other`` whose value differs from ``full``'s."""
    return {name: other[name] for name, value in full.items() if name in other and not same_value(other[name], value)}


def complete_profile(tree: ast.Module, overrides: dict[str, Any]) -> dict[str, Any]:
    """A profile plus the constants computed from the ones it sets (``half = dim // 2`` when it
    sets ``dim``): a profile's constants are set after the file has run, so a computed constant
    would otherwise keep its full-size value."""
    steps = constant_steps(tree)
    derived = changed(evaluate_steps(steps), evaluate_steps(steps, overrides=overrides))
    return {**overrides, **{name: value for name, value in derived.items() if name not in overrides}}


#: A size written as a literal inside a function (``torch.randn(16, 8205)`` in ``get_inputs``, a
#: default of ``Model.__init__``) is set by a profile under the key ``"<function>@<line>:<col>"``,
#: the position of the literal in the file (``"get_inputs@12:28"``).
LITERAL_KEY_SEPARATOR = "@"


def literal_key(scope: str, node: ast.expr) -> str:
    """The profile key of the literal ``node`` inside function ``scope``."""
    return f"{scope}{LITERAL_KEY_SEPARATOR}{node.lineno}:{node.col_offset}"


def parse_literal_key(key: str) -> tuple[int, int] | None:
    """``(line, col)`` of a literal key, ``None`` for a constant's name."""
    scope, sep, where = key.rpartition(LITERAL_KEY_SEPARATOR)
    line, colon, col = where.partition(":")
    if not (sep and scope and colon and line.isdigit() and col.isdigit()):
        return None
    return int(line), int(col)
