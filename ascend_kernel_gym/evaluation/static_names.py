"""Static stage, names: which global names the candidate's code reads, and whether it may.

Python looks a name up in the function's own scope, then in the enclosing functions' scopes
(class bodies skipped), then in the module's globals, then in the builtins. A global that the
module never binds is not necessarily undefined when the code runs: Triton's interpreter copies
its own globals (NumPy as ``np``, its native module, ``interpreter_builder``,
``interpreter_semantic``, ...) into the module of every kernel it rewrites, so a kernel body
or host code reading such a name reaches interpreter internals. :func:`name_problems` reports

* every read of a name that resolves to the module's globals but that the module neither binds
  (assignment, import, ``def``, ``class``, ``for`` / ``with`` / ``except`` target, a ``global``
  declaration assigned in a function) nor gets from the builtins; ``del`` binds nothing;
* every global use (read, assignment, ``del``, ``global`` declaration) of a name the interpreter
  injects (``sandbox_rules.INTERPRETER_GLOBAL_NAMES``): a binding that never runs (``if False:``)
  would leave the injected value in place.

The resolution follows the compiler's rules: function, lambda, class and comprehension scopes;
a comprehension's first iterable, decorators, defaults, base classes and (without
``from __future__ import annotations``) annotations are evaluated in the enclosing scope; an
assignment expression in a comprehension binds in the enclosing function. ``if __name__ ==
"__main__":`` blocks are skipped, as the rest of the static stage skips them (they never run).
Plain data in, plain data out: no imports beyond the standard library and the rules.
"""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass, field

from ascend_kernel_gym.evaluation import sandbox_rules as rules

_BUILTIN_NAMES = frozenset(dir(builtins))
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)


@dataclass(frozen=True)
class NameProblem:
    """One refused use of a name; ``hack`` is False for a reserved name the code binds but never
    reads (an unused ``import numpy as np``): refused, yet nothing could have reached the
    interpreter's value through it."""

    name: str
    line: int
    message: str
    hack: bool = True


@dataclass
class _Scope:
    kind: str  # "module", "function", "class" or "comprehension"
    parent: _Scope | None
    #: names local to this scope (bound or deleted here, not declared global / nonlocal)
    local: set[str] = field(default_factory=set)
    declared_global: set[str] = field(default_factory=set)
    declared_nonlocal: set[str] = field(default_factory=set)
    #: (name, line, is a read) in the order met
    uses: list[tuple[str, int, bool]] = field(default_factory=list)


class _Collector(ast.NodeVisitor):
    """Builds the scopes and what each binds and uses (no resolution yet)."""

    def __init__(self, future_annotations: bool) -> None:
        self.future_annotations = future_annotations
        self.module = _Scope("module", None)
        self.scopes: list[_Scope] = [self.module]
        self.current = self.module
        #: names the module binds for real (``del`` excluded), from any scope through ``global``
        self.module_bound: set[str] = set()
        #: (scope, name) pairs stored, resolved once every ``global`` statement is known
        self._stores: list[tuple[_Scope, str]] = []

    # --- scope helpers -----------------------------------------------------------------------
    def _enter(self, kind: str) -> _Scope:
        scope = _Scope(kind, self.current)
        self.scopes.append(scope)
        self.current = scope
        return scope

    def _leave(self, scope: _Scope) -> None:
        assert scope.parent is not None
        self.current = scope.parent

    def _bind(self, name: str, line: int, scope: _Scope | None = None, deletes: bool = False) -> None:
        target = scope or self.current
        target.uses.append((name, line, False))
        target.local.add(name)  # corrected for global / nonlocal declarations in finish()
        if not deletes:
            self._stores.append((target, name))

    def _read(self, name: str, line: int) -> None:
        self.current.uses.append((name, line, True))

    def _annotation(self, node: ast.expr | None, evaluated: bool = True) -> None:
        if node is not None and evaluated and not self.future_annotations:
            self.visit(node)

    def finish(self) -> None:
        for scope in self.scopes:
            scope.local -= scope.declared_global | scope.declared_nonlocal
        for scope, name in self._stores:
            if scope is self.module or name in scope.declared_global:
                self.module_bound.add(name)

    # --- statements that open scopes -----------------------------------------------------------
    def visit_Module(self, node: ast.Module) -> None:
        for stmt in node.body:
            self.visit(stmt)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for decorator in node.decorator_list:
            self.visit(decorator)
        self._arguments_outside(node.args)
        self._annotation(node.returns)
        self._bind(node.name, node.lineno)
        scope = self._enter("function")
        self._arguments_inside(node.args, node.lineno)
        for stmt in node.body:
            self.visit(stmt)
        self._leave(scope)

    visit_AsyncFunctionDef = visit_FunctionDef  # noqa: N815

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._arguments_outside(node.args)
        scope = self._enter("function")
        self._arguments_inside(node.args, node.lineno)
        self.visit(node.body)
        self._leave(scope)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for expr in [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]:
            self.visit(expr)
        self._bind(node.name, node.lineno)
        scope = self._enter("class")
        for stmt in node.body:
            self.visit(stmt)
        self._leave(scope)

    def _comprehension(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp) -> None:
        generators = node.generators
        self.visit(generators[0].iter)  # evaluated in the enclosing scope
        scope = self._enter("comprehension")
        for index, generator in enumerate(generators):
            if index:
                self.visit(generator.iter)
            self.visit(generator.target)
            for condition in generator.ifs:
                self.visit(condition)
        if isinstance(node, ast.DictComp):
            self.visit(node.key)
            self.visit(node.value)
        else:
            self.visit(node.elt)
        self._leave(scope)

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _comprehension  # noqa: N815

    def _arguments_outside(self, args: ast.arguments) -> None:
        for default in [*args.defaults, *(d for d in args.kw_defaults if d is not None)]:
            self.visit(default)
        for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
            if arg is not None:
                self._annotation(arg.annotation)

    def _arguments_inside(self, args: ast.arguments, line: int) -> None:
        for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
            if arg is not None:
                self._bind(arg.arg, getattr(arg, "lineno", line))

    # --- bindings and uses ---------------------------------------------------------------------
    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            self._read(node.id, node.lineno)
        else:
            self._bind(node.id, node.lineno, deletes=isinstance(node.ctx, ast.Del))

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.visit(node.value)
        scope = self.current
        while scope.kind == "comprehension" and scope.parent is not None:
            scope = scope.parent  # ``(y := f(x)) for x in xs`` binds y outside the comprehension
        if scope is not self.current:
            self.current.declared_nonlocal.add(node.target.id)  # resolved through the enclosing scope
        self._bind(node.target.id, node.lineno, scope)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if isinstance(node.target, ast.Name):
            self._read(node.target.id, node.lineno)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        # An annotation in a function body is never evaluated; at module or class level it is.
        self._annotation(node.annotation, evaluated=self.current.kind in ("module", "class"))
        if node.value is not None:
            self.visit(node.value)
            self.visit(node.target)
        elif isinstance(node.target, ast.Name):
            # ``x: int`` binds nothing, but makes ``x`` local to a function
            self._bind(node.target.id, node.lineno, deletes=True)
        else:
            self.visit(node.target)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._bind(alias.asname or alias.name.split(".")[0], node.lineno)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        for alias in node.names:
            if alias.name != "*":
                self._bind(alias.asname or alias.name, node.lineno)

    def visit_Global(self, node: ast.Global) -> None:
        self.current.declared_global.update(node.names)
        for name in node.names:
            self.current.uses.append((name, node.lineno, False))

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        self.current.declared_nonlocal.update(node.names)

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.type is not None:
            self.visit(node.type)
        if node.name:
            self._bind(node.name, node.lineno)
        for stmt in node.body:
            self.visit(stmt)

    def visit_MatchAs(self, node: ast.MatchAs) -> None:
        if node.pattern is not None:
            self.visit(node.pattern)
        if node.name:
            self._bind(node.name, node.lineno)

    def visit_MatchStar(self, node: ast.MatchStar) -> None:
        if node.name:
            self._bind(node.name, node.lineno)

    def visit_MatchMapping(self, node: ast.MatchMapping) -> None:
        self.generic_visit(node)
        if node.rest:
            self._bind(node.rest, node.lineno)

    def visit_If(self, node: ast.If) -> None:
        if is_main_guard(node.test):
            for stmt in node.orelse:
                self.visit(stmt)
            return
        self.generic_visit(node)


def _resolves_global(scope: _Scope, name: str) -> bool:
    """Whether ``name`` used in ``scope`` is looked up in the module's globals (then builtins)."""
    if name in scope.declared_global or scope.kind == "module":
        return True
    if name in scope.local:
        return False
    if scope.kind == "class" and name in scope.declared_nonlocal:
        return False
    outer = scope.parent
    while outer is not None:
        if outer.kind == "module":
            return True
        if outer.kind != "class":  # class bodies are not enclosing scopes of what they contain
            if name in outer.declared_global:
                return True
            if name in outer.local or name in outer.declared_nonlocal:
                return False
        outer = outer.parent
    return True


def is_main_guard(test: ast.expr) -> bool:
    """``__name__ == "__main__"`` (either order)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    names = [s for s in sides if isinstance(s, ast.Name) and s.id == "__name__"]
    consts = [s for s in sides if isinstance(s, ast.Constant) and s.value == "__main__"]
    return len(names) == 1 and len(consts) == 1


def _has_future_annotations(tree: ast.Module) -> bool:
    return any(
        isinstance(stmt, ast.ImportFrom)
        and stmt.module == "__future__"
        and any(alias.name == "annotations" for alias in stmt.names)
        for stmt in tree.body
    )


def name_problems(tree: ast.Module) -> list[NameProblem]:
    """Refused uses of global names in ``tree`` (see the module docstring), in source order."""
    collector = _Collector(_has_future_annotations(tree))
    collector.visit(tree)
    collector.finish()
    problems: list[NameProblem] = []
    seen: set[tuple[str, str]] = set()
    read_reserved = {
        name
        for scope in collector.scopes
        for name, _, is_read in scope.uses
        if is_read and name in rules.INTERPRETER_GLOBAL_NAMES and _resolves_global(scope, name)
    }
    for scope in collector.scopes:
        for name, line, is_read in scope.uses:
            if name.startswith("__") and name.endswith("__"):
                continue  # module dunders: the static stage's dunder rules decide
            if not _resolves_global(scope, name):
                continue
            if name in rules.INTERPRETER_GLOBAL_NAMES and ("reserved", name) not in seen:
                seen.add(("reserved", name))
                problems.append(
                    NameProblem(
                        name,
                        line,
                        f"the global name `{name}` is reserved: Triton's interpreter puts its internals under this "
                        "name in your module, bound or not; use another name (and define or import every name you use)",
                        hack=name in read_reserved,
                    )
                )
            elif (
                is_read
                and name not in collector.module_bound
                and name not in _BUILTIN_NAMES
                and name not in rules.INTERPRETER_GLOBAL_NAMES
                and ("undefined", name) not in seen
            ):
                seen.add(("undefined", name))
                problems.append(
                    NameProblem(
                        name,
                        line,
                        f"the name `{name}` is read but your code never defines or imports it (Triton's interpreter "
                        "injects internals under undefined global names); define or import every name you use",
                    )
                )
    problems.sort(key=lambda p: p.line)
    return problems


def binding_problems(tree: ast.Module) -> list[NameProblem]:
    """Bindings that would let a name mean something else than the static stage's resolver
    thinks (its alias table has no scopes): a dangerous builtin's name bound anywhere (one
    parameter named ``getattr`` made every ``getattr`` of the file unchecked) and imports in a
    class body (``Ns.e`` then holds a module the resolver never follows). One name imported as
    two different things (the resolver keeps the last binding it saw, not Python's) is
    :func:`alternate_import_paths`' job."""
    problems: list[NameProblem] = []
    for node in ast.walk(tree):
        bound = _bound_by(node)
        if isinstance(node, ast.ClassDef):
            for stmt in node.body:
                if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                    message = "imports in a class body are forbidden: import at the top of the file"
                    problems.append(NameProblem("import", stmt.lineno, message))
        elif isinstance(node, ast.Import):
            bound += [alias.asname or alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            bound += [alias.asname or alias.name for alias in node.names if alias.name != "*"]
        for name in bound:
            if name in rules.UNBINDABLE_BUILTINS:
                message = f"binding the name `{name}` is forbidden: it would hide the builtin from the checks"
                problems.append(NameProblem(name, getattr(node, "lineno", 0), message))
    return problems


def _bound_by(node: ast.AST) -> list[str]:
    """The names ``node`` binds other than by an import: an assignment target, a parameter, a
    ``def`` or ``class``, a ``match`` capture, an ``except ... as`` name."""
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
        return [node.id]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.MatchAs, ast.MatchStar, ast.ExceptHandler)) and node.name:
        return [node.name]
    return []


def import_targets(tree: ast.Module) -> dict[str, set[str]]:
    """Per name bound by an import: the dotted paths it is imported as (``import a.b as x`` and
    ``from a import b as x`` both give ``x -> a.b``)."""
    imported: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                name = alias.asname or alias.name.split(".")[0]
                imported.setdefault(name, set()).add(alias.name if alias.asname else name)
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                if alias.name != "*":
                    imported.setdefault(alias.asname or alias.name, set()).add(f"{node.module}.{alias.name}")
    return imported


#: the modules a name may be imported as more than once: Triton's language modules, whose names
#: move between versions (``triton.language.math``, ``triton.language.extra.cuda.libdevice``,
#: ``triton.language.extra.libdevice``)
FALLBACK_ROOT = "triton.language"


def alternate_import_paths(tree: ast.Module) -> tuple[list[NameProblem], list[tuple[ast.AST, str]]]:
    """Names imported as several things: what each use must be checked as, or why it cannot be.

    The resolver keeps one binding per name, so a name imported as two modules (a fallback for
    another Triton version: ``try: from triton.language.extra.cuda import libdevice`` / ``except
    ImportError: from triton.language.extra import libdevice``) is checked here under every one
    of them: every import must be of a module under :data:`FALLBACK_ROOT`, each use must be an
    attribute path (``libdevice.erf``), and ``(node, path)`` is returned for that path under every
    import, for the path policy. The name may not be bound any other way, nor used as a value
    (passed, returned, given to ``getattr``), nor imported from elsewhere (``torch`` in one branch,
    Triton in the other: the kernel checks follow only the last): those are problems.
    Needs the parents :func:`set_parents` gives.
    """
    problems: list[NameProblem] = []
    paths: list[tuple[ast.AST, str]] = []
    several = {name: targets for name, targets in import_targets(tree).items() if len(targets) > 1}
    if not several:
        return problems, paths
    rebound: set[str] = set()  # bound other than by its imports (``del`` counts)
    uses: dict[str, list[tuple[ast.AST, list[str]]]] = {name: [] for name in several}
    for node in ast.walk(tree):
        rebound.update(_bound_by(node))
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Del):
            rebound.add(node.id)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in several:
            chain: list[str] = []
            top: ast.AST = node
            parent = getattr(node, "_akg_parent", None)
            while isinstance(parent, ast.Attribute) and parent.value is top:
                chain.append(parent.attr)
                top, parent = parent, getattr(parent, "_akg_parent", None)
            uses[node.id].append((top, chain))
    for name, targets in several.items():
        # Triton's language modules only: the other checks (what a kernel may call) follow one of them
        loose = name in rebound or any(not chain for _, chain in uses[name])
        triton_only = all(t == FALLBACK_ROOT or t.startswith(FALLBACK_ROOT + ".") for t in targets)
        if loose or not triton_only:
            message = (
                f"`{name}` is imported as {len(targets)} different things; give each import its own name (a "
                "fallback import for another Triton version may bind one name to two `triton.language` modules, "
                f"used only as `{name}.attribute`)"
            )
            problems.append(NameProblem(name, 0, message))
            continue
        for node, chain in uses[name]:
            paths.extend((node, ".".join([target, *chain])) for target in sorted(targets))
    return problems, paths


def set_parents(tree: ast.AST) -> None:
    """Give every node of ``tree`` its parent (``_akg_parent``)."""
    for parent in ast.walk(tree):
        for child in ast.iter_child_nodes(parent):
            child._akg_parent = parent  # type: ignore[attr-defined]
