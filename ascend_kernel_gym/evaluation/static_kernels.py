"""The names a Triton kernel may use: those compiled Triton resolves, so the interpreter takes no more.

Compiled Triton (its code generator) resolves a name in a ``@triton.jit`` function to one of the
function's own names, a global of a few kinds (a module, another jit function, an object of
``triton.language``, a dtype, a value made with ``tl.constexpr(...)``) or one of its builtins
(:data:`TRITON_BUILTINS`); any other name fails to compile. The interpreter runs the body as plain
Python, where every name resolves: a kernel there could write the values it loads into a
module-level list, store an answer the host left in one, or turn values into text with ``str``,
channels between a kernel and Python that no kernel on a device has (one kernel read the input
out as text, Python computed the softmax, a second kernel wrote it back: graded correct).

:func:`kernel_name_problems` finds such names in the candidate's kernels. Module-level names bound
to immutable literals (``EPS = 1e-5``) are let through (no channel; compiled Triton wants them as
``tl.constexpr``), as is anything imported from ``triton``.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable, Iterator

from ascend_kernel_gym.evaluation.static_names import NameProblem

#: the builtins compiled Triton resolves inside a kernel (``CodeGenerator.builtin_namespace``)
TRITON_BUILTINS = frozenset(
    {"len", "list", "range", "float", "int", "isinstance", "getattr", "hasattr", "print", "min", "max"}
)
_BUILTINS = frozenset(dir(builtins))
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _is_literal(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return _is_literal(node.operand)
    if isinstance(node, ast.Tuple):
        return all(_is_literal(e) for e in node.elts)
    return False


def _made_by_triton(value: ast.expr, resolve: Callable[[ast.expr], str | None]) -> bool:
    """``tl.constexpr(8)``, ``triton.jit(fn)``, ``triton.autotune(...)(kernel)``, ``tlm = tl.math``: a
    value Triton made, or Triton's own."""
    path = resolve(value)
    if path is not None and path.split(".")[0] == "triton":
        return True
    while isinstance(value, ast.Call):
        path = resolve(value.func)
        if path is not None and path.split(".")[0] == "triton":
            return True
        value = value.func
    return False


def _stored_names(node: ast.AST) -> Iterator[str]:
    """Names a target binds (``a``, ``a, b``, ``*rest``); attributes and subscripts bind none."""
    if isinstance(node, ast.Name):
        yield node.id
    elif isinstance(node, (ast.Tuple, ast.List)):
        for element in node.elts:
            yield from _stored_names(element)
    elif isinstance(node, ast.Starred):
        yield from _stored_names(node.value)


def _scope_bindings(
    statements: list[ast.stmt],
    resolve: Callable[[ast.expr], str | None],
    is_triton_function: Callable[[ast.FunctionDef | ast.AsyncFunctionDef], bool],
    unknown: set[str],
) -> dict[str, bool]:
    """Every name ``statements`` bind in their scope (a module or a function around a kernel) and
    whether a kernel may read it: False if any of its bindings is not allowed. ``unknown``: names
    bound to values no one can know here (a function's parameters): never allowed."""
    kinds: dict[str, list[ast.expr | bool]] = {name: [False] for name in unknown}

    def bind(name: str, kind: ast.expr | bool) -> None:
        kinds.setdefault(name, []).append(kind)

    def walk(body: list[ast.stmt]) -> None:
        for stmt in body:
            if isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    bind((alias.asname or alias.name).split(".")[0], True)  # a module
            elif isinstance(stmt, ast.ImportFrom):
                from_triton = (stmt.module or "").split(".")[0] == "triton" and not stmt.level
                for alias in stmt.names:
                    bind(alias.asname or alias.name, from_triton)
            elif isinstance(stmt, _FUNCTIONS):
                bind(stmt.name, is_triton_function(stmt))
            elif isinstance(stmt, ast.ClassDef):
                bind(stmt.name, False)
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                for target in targets:
                    for name in _stored_names(target):
                        bind(name, stmt.value if stmt.value is not None else False)
            elif isinstance(stmt, ast.AugAssign):
                for name in _stored_names(stmt.target):
                    bind(name, False)
            elif isinstance(stmt, (ast.For, ast.AsyncFor)):
                for name in _stored_names(stmt.target):
                    bind(name, False)
                walk(stmt.body + stmt.orelse)
            elif isinstance(stmt, (ast.With, ast.AsyncWith)):
                for item in stmt.items:
                    if item.optional_vars is not None:
                        for name in _stored_names(item.optional_vars):
                            bind(name, False)
                walk(stmt.body)
            elif isinstance(stmt, (ast.If, ast.While)):
                walk(stmt.body + stmt.orelse)
            elif isinstance(stmt, ast.Try):
                walk(stmt.body + stmt.orelse + stmt.finalbody + [s for h in stmt.handlers for s in h.body])
            if not isinstance(stmt, (*_FUNCTIONS, ast.ClassDef)):
                for node in ast.walk(stmt):
                    if isinstance(node, ast.NamedExpr):
                        bind(node.target.id, False)

    walk(statements)
    allowed: dict[str, bool] = {}

    def value_ok(value: ast.expr, seen: frozenset[str]) -> bool:
        """Immutable literals, values Triton made, and names / conditionals of allowed names."""
        if _is_literal(value) or _made_by_triton(value, resolve):
            return True
        if isinstance(value, ast.IfExp):  # ``act = _tanh if FAST else _erf``
            return value_ok(value.body, seen) and value_ok(value.orelse, seen)
        if isinstance(value, ast.Name) and value.id in kinds and value.id not in seen:
            return name_ok(value.id, seen | {value.id})  # ``sigmoid = _sigmoid``
        return False

    def name_ok(name: str, seen: frozenset[str]) -> bool:
        return all(kind is True or (not isinstance(kind, bool) and value_ok(kind, seen)) for kind in kinds[name])

    for name in kinds:
        allowed[name] = name_ok(name, frozenset({name}))
    return allowed


def _parameters(args: ast.arguments) -> set[str]:
    return {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg] if a}


def _own_names(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The names a function binds itself: its parameters and every name stored in its body."""
    names = _parameters(function.args)
    for node in ast.walk(function):
        if node is function:
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (*_FUNCTIONS, ast.ClassDef)):
            names.add(node.name)
        if isinstance(node, (*_FUNCTIONS, ast.Lambda)):
            names |= _parameters(node.args)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
    return names


def kernel_name_problems(
    tree: ast.Module,
    is_kernel: Callable[[ast.FunctionDef | ast.AsyncFunctionDef], bool],
    is_triton_function: Callable[[ast.FunctionDef | ast.AsyncFunctionDef], bool],
    resolve: Callable[[ast.expr], str | None],
) -> list[NameProblem]:
    """A problem for every name a kernel of ``tree`` reads that compiled Triton would not resolve
    (``is_triton_function``: kernels and ``@triton.constexpr_function`` helpers, which kernels may call)."""
    functions = [node for node in ast.walk(tree) if isinstance(node, _FUNCTIONS)]
    jitted = {
        node.args[0].id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and resolve(node.func) in ("triton.jit", "triton.runtime.jit.jit")
        and node.args
        and isinstance(node.args[0], ast.Name)
    }
    kernels = [f for f in functions if is_kernel(f) or f.name in jitted]
    allowed = _scope_bindings(tree.body, resolve, lambda f: is_triton_function(f) or f.name in jitted, set())
    problems: list[NameProblem] = []
    for kernel in kernels:
        own = _own_names(kernel)
        # a kernel made inside a function (a kernel factory) also reads that function's names
        enclosing: dict[str, bool] = {}
        parent = getattr(kernel, "_akg_parent", None)
        while parent is not None and not isinstance(parent, ast.Module):
            if isinstance(parent, _FUNCTIONS):
                scope = _scope_bindings(
                    parent.body, resolve, lambda f: is_triton_function(f) or f.name in jitted, _parameters(parent.args)
                )
                enclosing = {**scope, **enclosing}  # the nearest binding wins
            parent = getattr(parent, "_akg_parent", None)
        # the body only: decorators, defaults and annotations are evaluated where the def runs
        for node in (n for stmt in kernel.body for n in ast.walk(stmt)):
            if isinstance(node, (ast.Global, ast.Nonlocal)):
                statement = type(node).__name__.lower()
                message = f"`{statement}` in the kernel `{kernel.name}`: a kernel cannot rebind names outside itself"
                problems.append(NameProblem(kernel.name, node.lineno, message))
            if not isinstance(node, ast.Name) or not isinstance(node.ctx, ast.Load) or node.id in own:
                continue
            name = node.id
            scope = enclosing if name in enclosing else allowed
            if name in scope and not scope[name]:
                problems.append(NameProblem(name, node.lineno, _global_message(kernel.name, name)))
            elif name not in scope and name in _BUILTINS and name not in TRITON_BUILTINS:
                problems.append(NameProblem(name, node.lineno, _builtin_message(kernel.name, name)))
    return problems


def _builtin_message(kernel: str, name: str) -> str:
    return (
        f"the kernel `{kernel}` uses the builtin `{name}`, which a compiled Triton kernel does not have (it has "
        f"{', '.join(sorted(TRITON_BUILTINS))})"
    )


def _global_message(kernel: str, name: str) -> str:
    return (
        f"the kernel `{kernel}` reads `{name}`, which compiled Triton cannot resolve inside a kernel: a kernel may "
        "use its own arguments and names, modules, other @triton.jit functions, triton.language objects and "
        "module-level values made with tl.constexpr(...) or plain literals (pass anything else as an argument)"
    )
