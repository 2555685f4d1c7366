"""Static stage: checks on the candidate's AST, before any of its code runs.

The checker resolves names to dotted paths (``from torch import nn as q`` makes ``q.functional``
mean ``torch.nn.functional``; ``f = torch.compile`` makes ``f`` mean ``torch.compile``;
``getattr(torch, "compile")`` means ``torch.compile``) and then applies the policy in
:mod:`.sandbox_rules`. Every violation gets one message with its line number. Python-level compute
in ``forward`` is only a warning here: the authoritative check is the operator recorder that
runs in the child.
"""

from __future__ import annotations

import ast
import builtins
import threading
from dataclasses import dataclass, field

from ascend_kernel_gym.evaluation import sandbox_rules as rules
from ascend_kernel_gym.evaluation import static_names
from ascend_kernel_gym.evaluation.result import HACK_ERROR_TYPES, ErrorType
from ascend_kernel_gym.evaluation.static_kernels import kernel_name_problems
from ascend_kernel_gym.evaluation.static_names import is_main_guard

_BUILTIN_NAMES = frozenset(dir(builtins))
#: warnings a report keeps (then one line says how many more there were)
MAX_WARNINGS = 40
#: CPython 3.11's ast.parse is not thread-safe (concurrent calls can fail with "AST constructor
#: recursion depth mismatch", cpython issue 106905): parses are serialised.
_PARSE_LOCK = threading.Lock()


@dataclass
class Violation:
    """One static-check failure.

    ``hack``: whether a violation of a hack type (``HACK_ERROR_TYPES``) counts as an attempt to game
    the harness; False for a refusal that cannot have helped (an import the code never uses).
    """

    error_type: ErrorType
    message: str
    line: int | None = None
    hack: bool = True

    def render(self) -> str:
        where = f"line {self.line}: " if self.line else ""
        return f"{where}{self.message}"


@dataclass
class StaticReport:
    """What the static stage found."""

    violations: list[Violation] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    kernels: list[str] = field(default_factory=list)
    #: Dotted paths rooted at imports that the code uses (checked against live modules in the child).
    paths: set[str] = field(default_factory=set)
    #: Paths of imported names used as values (arguments, list items, defaults, returns): the child
    #: refuses them if they are modules (a module handed around escapes attribute resolution).
    escaping: set[str] = field(default_factory=set)

    @property
    def ok(self) -> bool:
        return not self.violations

    @property
    def error_type(self) -> ErrorType:
        """The most important violation's type (syntax > time-out > forbidden > missing ModelNew > no kernel)."""
        order = [
            ErrorType.NO_CODE,
            ErrorType.SYNTAX,
            ErrorType.TIMEOUT,  # the static check ran past its limit (static_runner.py)
            ErrorType.FORBIDDEN,
            ErrorType.MISSING_MODEL_NEW,
            ErrorType.NO_TRITON_KERNEL,
        ]
        kinds = {v.error_type for v in self.violations}
        for kind in order:
            if kind in kinds:
                return kind
        return ErrorType.NONE

    @property
    def hack_violations(self) -> list[Violation]:
        """The violations that are attempts to game the harness (a hack type, not marked harmless)."""
        return [v for v in self.violations if v.hack and v.error_type in HACK_ERROR_TYPES]

    @property
    def hack(self) -> bool:
        """Whether the refusal counts as a hack: any violation in :attr:`hack_violations`. A code
        refused only for what it never uses (``import numpy as np``, ``np`` unused) is ``forbidden``
        without being a hack."""
        return bool(self.hack_violations)

    def message(self, limit: int = 12) -> str:
        lines = [v.render() for v in self.violations[:limit]]
        if len(self.violations) > limit:
            lines.append(f"... and {len(self.violations) - limit} more")
        return "\n".join(lines)


class _Checker(ast.NodeVisitor):
    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.aliases: dict[str, str] = {}
        self.report = StaticReport()
        self._seen: set[tuple[int | None, str]] = set()
        self._kernel_depth = 0
        self._constexpr_depth = 0
        self._forward_depth = 0
        self._defined_names: set[str] = set()
        #: names bound by ``import x`` / ``import x.y as z``: certainly modules
        self._module_names: set[str] = set()
        #: the candidate's functions that are not Triton functions, its classes and lambdas: plain
        #: Python, which a kernel may not call (the interpreter would run it, no compiler would)
        self._plain_callables: set[str] = set()
        #: first parameters of the methods being visited (``self`` / ``cls``)
        self._method_self: list[str] = []
        #: names the candidate defines on its own classes and instances (``self._cache = ...``)
        self._own_attributes: set[str] = set()
        #: the candidate's class names (never rebound)
        self._class_names: set[str] = set()
        #: names that can only hold one of the candidate's class statements' classes: bound only
        #: by class statements, or once, at module level, as ``Alias = OwnClass``
        self._own_classes: set[str] = set()
        #: how many times each name is bound anywhere (assignments, imports, defs, parameters ...)
        self._bindings: dict[str, int] = {}
        #: every node of the tree, walked once (the checks below pass over it several times)
        self._nodes: list[ast.AST] = list(ast.walk(tree))
        #: ``resolve`` per node (``id``); cleared whenever an alias changes. Without it a chain
        #: ``a.b.c...`` of n attributes costs n² (each inner node resolves the chain below it).
        self._resolved: dict[int, str | None] = {}
        self._warned: set[str] = set()
        #: names a class body assigns that it may (``__slots__``, ``__constants__``), by ``id``
        self._class_metadata: set[int] = {
            id(target)
            for node in self._nodes
            if isinstance(node, ast.ClassDef)
            for stmt in node.body
            if isinstance(stmt, (ast.Assign, ast.AnnAssign))
            for target in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target])
            if isinstance(target, ast.Name) and target.id in rules.CLASS_BODY_DUNDER_NAMES
        }
        #: the decorator expressions (``id``): ``functools.wraps(fn)`` may stand only there
        self._decorators: set[int] = {
            id(decorator)
            for node in self._nodes
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            for decorator in node.decorator_list
        }
        self._warnings_cut = 0
        #: names the code mentions anywhere but in the imports that bind them (see ``names_in_use``)
        self._names_in_use = names_in_use(tree)

    # --- helpers ---------------------------------------------------------------------------
    def fail(self, node: ast.AST | None, message: str, kind: ErrorType = ErrorType.FORBIDDEN) -> None:
        self.fail_line(getattr(node, "lineno", None), message, kind)

    def fail_line(
        self, line: int | None, message: str, kind: ErrorType = ErrorType.FORBIDDEN, *, hack: bool = True
    ) -> None:
        key = (line, message)
        if key in self._seen:
            return
        self._seen.add(key)
        self.report.violations.append(Violation(kind, message, line, hack))

    def warn(self, node: ast.AST, message: str) -> None:
        text = f"line {getattr(node, 'lineno', '?')}: {message}"
        if text in self._warned:
            return
        self._warned.add(text)
        if len(self.report.warnings) < MAX_WARNINGS:
            self.report.warnings.append(text)
        else:
            self._warnings_cut += 1

    def resolve(self, node: ast.AST) -> str | None:
        """The dotted path an expression refers to, when it is rooted at an import or builtin."""
        key = id(node)
        if key in self._resolved:
            return self._resolved[key]
        path = self._resolve(node)
        self._resolved[key] = path
        return path

    def _resolve(self, node: ast.AST) -> str | None:
        if isinstance(node, ast.Name):
            if node.id in self.aliases:
                return self.aliases[node.id]
            if node.id in _BUILTIN_NAMES and node.id not in self._defined_names:
                return f"builtins.{node.id}"
            return None
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            return f"{base}.{node.attr}" if base else None
        if isinstance(node, ast.Call) and self.resolve(node.func) == "builtins.getattr" and len(node.args) >= 2:
            name = node.args[1]
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                base = self.resolve(node.args[0])
                return f"{base}.{name.value}" if base else None
        return None

    def check_path(self, node: ast.AST, path: str) -> None:
        """Apply the module / path policy to one resolved dotted path."""
        parts = path.split(".")
        root = parts[0]
        if root != "builtins":
            self.report.paths.add(path)
        if root == "builtins":
            name = parts[1] if len(parts) > 1 else ""
            if name in rules.FORBIDDEN_BUILTINS:
                self.fail(node, f"`{name}` is forbidden: {rules.FORBIDDEN_BUILTINS[name]}")
            return
        if root in rules.FORBIDDEN_MODULES or root not in rules.ALLOWED_IMPORT_ROOTS:
            self.fail(node, f"module `{root}` is forbidden ({self._allowed_hint()})")
            return
        for part in parts[1:]:
            if part in rules.FORBIDDEN_MODULES:
                self.fail(node, f"`{path}` reaches the forbidden module `{part}`")
                return
            if part.startswith("_") and not (part.startswith("__") and part.endswith("__")):
                self.fail(node, f"`{path}` uses a private API (names starting with `_` are off limits)")
                return
        reason = rules.forbidden_path_reason(path)
        if reason is not None:
            self.fail(node, f"`{path}` is forbidden: {reason}")
            return

    @staticmethod
    def _allowed_hint() -> str:
        allowed = sorted(rules.ALLOWED_IMPORT_ROOTS - {"__future__"})
        return "a kernel may import only " + ", ".join(allowed)

    # --- pre-pass: aliases --------------------------------------------------------------------
    def collect_aliases(self) -> None:
        rebound: set[str] = set()  # names bound other than by their def / class statement
        bindings = self._bindings
        for node in self._nodes:
            if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                rebound.add(node.id)
                bindings[node.id] = bindings.get(node.id, 0) + 1
            elif isinstance(node, ast.arg):
                rebound.add(node.arg)
                bindings[node.arg] = bindings.get(node.arg, 0) + 1
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    bound = alias.asname or alias.name.split(".")[0]
                    bindings[bound] = bindings.get(bound, 0) + 1
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                for name in node.names:
                    bindings[name] = bindings.get(name, 0) + 2  # bound from inside a function
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bindings[node.name] = bindings.get(node.name, 0) + 1
            if isinstance(node, ast.ClassDef):
                self._class_names.add(node.name)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self._defined_names.add(node.name)
                if not isinstance(getattr(node, "_akg_parent", None), ast.ClassDef):  # not a method
                    self._plain_callables.add(node.name)
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Lambda):
                self._plain_callables.update(t.id for t in node.targets if isinstance(t, ast.Name))
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.ctx, ast.Store)
                and isinstance(node.value, ast.Name)
                and node.value.id in ("self", "cls")
            ):
                self._own_attributes.add(node.attr)
            if isinstance(node, ast.ClassDef):
                for stmt in node.body:
                    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                        self._own_attributes.add(stmt.name)
                    elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                        self._own_attributes.update(t.id for t in targets if isinstance(t, ast.Name))
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.aliases[alias.asname] = alias.name
                        self._module_names.add(alias.asname)
                    else:
                        root = alias.name.split(".")[0]
                        self.aliases[root] = root
                        self._module_names.add(root)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    if alias.name != "*":
                        self.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Name):
                        self._defined_names.add(target.id)
            elif isinstance(node, ast.arg):
                self._defined_names.add(node.arg)
        # Assignments of resolvable paths (``f = torch.compile``), iterated to a fixed point.
        for _ in range(4):
            changed = False
            for node in self._nodes:
                pairs: list[tuple[ast.AST, ast.AST]] = []
                if isinstance(node, ast.Assign):
                    pairs = [(t, node.value) for t in node.targets]
                elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
                    pairs = [(node.target, node.value)]
                for target, value in pairs:
                    if isinstance(target, ast.Name):
                        path = self.resolve(value)
                        if path and self.aliases.get(target.id) != path:
                            self.aliases[target.id] = path
                            self._resolved.clear()
                            changed = True
            if not changed:
                break
        for node in self._nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and self.is_triton_function(node):
                self._plain_callables.discard(node.name)
        self._class_names -= rebound
        self._collect_own_classes()
        # A name also bound as a variable may hold anything by the time a kernel sees it; lambdas
        # assigned to a name stay plain Python.
        lambdas = {
            t.id
            for n in self._nodes
            if isinstance(n, ast.Assign) and isinstance(n.value, ast.Lambda)
            for t in n.targets
            if isinstance(t, ast.Name)
        }
        self._plain_callables -= rebound - lambdas

    def _collect_own_classes(self) -> None:
        statements: dict[str, int] = {}
        for node in self._nodes:
            if isinstance(node, ast.ClassDef):
                statements[node.name] = statements.get(node.name, 0) + 1
        own = {name for name, count in statements.items() if self._bindings.get(name) == count}
        aliases = [
            (stmt.targets[0].id, stmt.value.id)
            for stmt in self.tree.body
            if isinstance(stmt, ast.Assign)
            and isinstance(stmt.value, ast.Name)
            and self._sole_module_alias(stmt)
            and stmt.targets[0].id not in self.aliases
        ]
        for _ in aliases:  # to a fixed point: an alias of an alias
            grown = {alias for alias, value in aliases if value in own} - own
            if not grown:
                break
            own |= grown
        self._own_classes = own

    # --- visitors -----------------------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            before = len(self.report.violations)
            self.check_path(node, alias.name)
            self._unused_import(before, [alias.asname or alias.name.split(".")[0]])

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            self.fail(node, "relative imports are forbidden")
            return
        module = node.module or ""
        before = len(self.report.violations)
        self.check_path(node, module)
        if len(self.report.violations) > before:
            self._unused_import(before, [a.asname or a.name for a in node.names])
            return
        for alias in node.names:
            if alias.name == "*":
                self.fail(node, f"`from {module} import *` is forbidden (name every import)")
            else:
                before = len(self.report.violations)
                self.check_path(node, f"{module}.{alias.name}")
                self._unused_import(before, [alias.asname or alias.name])

    def _unused_import(self, before: int, bound: list[str]) -> None:
        """The refusals of an import since ``before`` are no hack when the code never mentions the
        names it binds: nothing of the module could have been used (still ``forbidden``)."""
        if any(name == "*" or name in self._names_in_use for name in bound):
            return
        for violation in self.report.violations[before:]:
            violation.hack = False

    def visit_If(self, node: ast.If) -> None:
        if is_main_guard(node.test):
            # Never runs: the candidate's module is not ``__main__`` (and ``__name__`` cannot be
            # assigned). Self-tests there may use what the evaluation refuses.
            for stmt in node.orelse:
                self.visit(stmt)
            return
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if id(node) in self._class_metadata:
            return
        is_dunder = node.id.startswith("__") and node.id.endswith("__")
        if is_dunder and isinstance(node.ctx, (ast.Store, ast.Del)) and node.id not in rules.ASSIGNABLE_DUNDER_NAMES:
            self.fail(node, f"assigning to `{node.id}` is forbidden")
            return
        if is_dunder and node.id not in rules.SAFE_DUNDER_NAMES:
            self.fail(node, f"the name `{node.id}` is forbidden (dunder names reach interpreter internals)")
            return
        path = self.resolve(node)
        self._refuse_wraps_as_value(node, path)
        if path and path.startswith("builtins."):
            name = path.split(".", 1)[1]
            if name in rules.FORBIDDEN_BUILTINS:
                self.fail(node, f"`{name}` is forbidden: {rules.FORBIDDEN_BUILTINS[name]}")
            elif name in rules.ATTR_BUILTINS and not getattr(node, "_akg_called", False):
                self.fail(node, f"`{name}` may only be called directly with a literal attribute name")
            elif name == "type" and not getattr(node, "_akg_called", False):
                problem = self._class_of_problem(node)
                if problem is not None:
                    self.fail(node, f"`type`: {problem}")
        if (self._kernel_depth or self._constexpr_depth) and path and path.split(".")[0] == "torch":
            self.fail(
                node,
                "PyTorch is used inside a @triton.jit kernel or a @triton.constexpr_function; they may use only "
                "triton.language and plain Python values",
            )
        if path and not path.startswith("builtins.") and isinstance(node.ctx, ast.Load) and self._escapes_to(node):
            if node.id in self._module_names:
                self.fail(
                    node,
                    f"the module `{path}` is used as a value (an assignment, an argument, a list item, a default, "
                    "a return value); use modules only as `module.attribute` (alias them with `import x as y`)",
                )
            else:
                self.report.escaping.add(path)

    def _sole_module_alias(self, assign: ast.Assign) -> bool:
        """A module-level ``name = path`` whose name is bound nowhere else (no other assignment,
        import, def, parameter, loop or ``global``): the checker's alias is then the only value."""
        return (
            isinstance(getattr(assign, "_akg_parent", None), ast.Module)
            and len(assign.targets) == 1
            and isinstance(assign.targets[0], ast.Name)
            and self._bindings.get(assign.targets[0].id, 0) == 1
        )

    def _own_private(self, node: ast.Attribute) -> bool:
        """``self._x`` / ``cls._x`` inside a method (the first parameter of a function defined in a
        class body), for a name the candidate itself defines on its classes or instances; or
        namedtuple's public API (``._replace``, ``._fields`` ...)."""
        if node.attr in rules.NAMEDTUPLE_API:
            return True
        if node.attr not in self._own_attributes:
            return False
        base = node.value
        if isinstance(base, ast.Call) and self.resolve(base.func) == "builtins.type" and len(base.args) == 1:
            base = base.args[0]  # ``type(self)._cache``
        if not isinstance(base, ast.Name):
            return False
        if base.id in self._class_names:  # ``ModelNew._BLOCK``
            return True
        return base.id in ("self", "cls") and base.id in self._method_self

    def _escapes_to(self, node: ast.expr) -> bool:
        """Whether a name or dotted path is used other than as ``name.attr``, ``name(...)``, a
        decorator or an argument of a harmless builtin (``print(torch)``). An assignment counts:
        an alias may be rebound where the checker cannot follow (a module is aliased with
        ``import x as y``)."""
        parent = getattr(node, "_akg_parent", None)
        if isinstance(parent, ast.Call) and node in parent.args:
            if self.resolve(parent.func) in rules.HARMLESS_BUILTINS:
                return False
            reads = self.resolve(parent) is not None or self.resolve(parent.func) == "builtins.hasattr"
            if reads and parent.args[0] is node:
                return False  # ``getattr(module, "name")``: resolved (and checked) as ``module.name``
        if isinstance(parent, ast.Attribute) and parent.value is node:
            return False
        if isinstance(parent, ast.Call) and parent.func is node:
            return False
        if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node in parent.decorator_list:
            return False
        if isinstance(parent, ast.Assign) and parent.value is node and self._sole_module_alias(parent):
            return False  # ``tlm = tl.math`` at module level, bound nowhere else: an import alias
        return True  # other assignments too: ``C = typing.collections`` rebound where it is never run

    def visit_Attribute(self, node: ast.Attribute) -> None:
        attr = node.attr
        before = len(self.report.violations)
        parent = getattr(node, "_akg_parent", None)
        inner = isinstance(parent, ast.Attribute) and parent.value is node  # the outer node reports the chain
        path = self.resolve(node)
        if path is not None and not inner:
            self.check_path(node, path)
            self._refuse_wraps_as_value(node, path)
            if isinstance(node.ctx, (ast.Store, ast.Del)) and len(self.report.violations) == before:
                self.fail(node, f"assigning to `{path}` is forbidden (monkeypatching libraries is not allowed)")
            elif isinstance(node.ctx, ast.Load) and not path.startswith("builtins.") and self._escapes_to(node):
                self.report.escaping.add(path)  # the child refuses it if it is a module
        if attr == "__class__" and isinstance(node.ctx, ast.Load):
            problem = self._class_of_problem(node)
            if problem is not None:
                self.fail(node, f"`{_source(node)}`: {problem}")
        if len(self.report.violations) == before:
            is_dunder = attr.startswith("__") and attr.endswith("__")
            if is_dunder and isinstance(node.ctx, (ast.Store, ast.Del)):
                self.fail(node, f"assigning to `{attr}` is forbidden (changing special methods or classes)")
            elif is_dunder and attr not in rules.SAFE_DUNDER_ATTRS:
                self.fail(node, f"attribute `{attr}` is forbidden (dunder access is how sandboxes are escaped)")
            elif attr in rules.FORBIDDEN_ATTRS:
                self.fail(node, f"attribute `.{attr}` is forbidden: {rules.FORBIDDEN_ATTRS[attr]}")
            elif attr in rules.FORBIDDEN_ATTR_NAMES:
                self.fail(
                    node, f"attribute `.{attr}` is forbidden (it reaches a forbidden module or interpreter internals)"
                )
            elif path is None and _is_private(attr) and not self._own_private(node):
                self.fail(
                    node,
                    f"attribute `.{attr}` is forbidden: names starting with `_` are private APIs (allowed only on "
                    "your own classes and instances, for names your code defines: `self._x` in a method, `cls._x`, "
                    "`ModelNew._x`)",
                )
            elif attr in rules.FORBIDDEN_KERNEL_ATTRS:
                self.fail(
                    node,
                    f"attribute `.{attr}` is forbidden: {rules.FORBIDDEN_KERNEL_ATTRS[attr]}",
                )
        if path is not None and self._forward_depth and not self._kernel_depth:
            self._hint_compute(node, path)
        elif path is None and self._forward_depth and not self._kernel_depth and attr in rules.COMPUTE_METHODS:
            if isinstance(parent, ast.Call) and parent.func is node:
                self.warn(node, f"`.{attr}()` in forward computes with PyTorch; do that work in your Triton kernel")
        if len(self.report.violations) == before or not inner:
            self.generic_visit(node)

    def _hint_compute(self, node: ast.AST, path: str) -> None:
        if not path.startswith("torch.") or path in rules.NON_COMPUTE_TORCH:
            return
        parent = getattr(node, "_akg_parent", None)
        if isinstance(parent, ast.Call) and parent.func is node:
            last = path.rsplit(".", 1)[-1]
            if path.startswith("torch.nn.functional.") or last in rules.COMPUTE_METHODS or last[:1].islower():
                self.warn(node, f"`{path}` in forward computes with PyTorch; do that work in your Triton kernel")

    def _refuse_wraps_as_value(self, node: ast.Name | ast.Attribute, path: str | None) -> None:
        """``functools.wraps`` anywhere but as the callee of a call (an alias, a list item, a
        partial's argument): its result's keywords could then be edited."""
        if path == rules.WRAPS_PATH and not getattr(node, "_akg_called", False):
            self.fail(node, rules.WRAPS_RULE)

    def visit_Call(self, node: ast.Call) -> None:
        func_path = self.resolve(node.func)
        if isinstance(node.func, (ast.Name, ast.Attribute)):
            node.func._akg_called = True  # type: ignore[attr-defined]
        if func_path == rules.WRAPS_PATH or (
            func_path is None and isinstance(node.func, ast.Attribute) and node.func.attr == "wraps"
        ):
            plain = len(node.args) == 1 and not node.keywords and not isinstance(node.args[0], ast.Starred)
            if not plain or id(node) not in self._decorators:
                self.fail(node, rules.WRAPS_RULE)
        if func_path in ("builtins.getattr", "builtins.setattr", "builtins.hasattr"):
            name = func_path.split(".")[1]
            if len(node.args) < 2 or not (
                isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
            ):
                self.fail(node, f"`{name}` with a computed attribute name is forbidden; write the attribute out")
            else:
                attr = node.args[1].value
                if name == "setattr" and attr.startswith("__") and attr.endswith("__"):
                    self.fail(node, f"`setattr(..., {attr!r})` is forbidden (changing special methods)")
                elif attr == "__class__":
                    self.fail(node, f"`{name}(..., '__class__')` is forbidden; write `x.__class__`")
                elif attr.startswith("__") and attr.endswith("__") and attr not in rules.SAFE_DUNDER_ATTRS:
                    self.fail(node, f"`{name}(..., {attr!r})` is forbidden (dunder access)")
                elif attr in rules.FORBIDDEN_ATTRS:
                    self.fail(node, f"`{name}(..., {attr!r})` is forbidden: {rules.FORBIDDEN_ATTRS[attr]}")
                elif attr in rules.FORBIDDEN_ATTR_NAMES or attr in rules.FORBIDDEN_KERNEL_ATTRS:
                    self.fail(
                        node, f"`{name}(..., {attr!r})` is forbidden (a forbidden module or interpreter internals)"
                    )
                target = self.resolve(node.args[0])
                if target is not None:
                    self.check_path(node, f"{target}.{attr}")
                    if name == "setattr":
                        self.fail(node, f"`setattr` on `{target}` is forbidden (monkeypatching libraries)")
        elif func_path == "builtins.type" and len(node.args) == 3:
            self.fail(node, "creating classes with type(name, bases, dict) is forbidden")
        elif func_path in rules.METACLASS_PATHS and func_path != "builtins.type":
            self.fail(node, f"calling the metaclass `{func_path}` is forbidden: it builds classes")
        elif func_path in rules.CLASS_FACTORY_PATHS:
            self.fail(node, f"`{func_path}` is forbidden: {rules.CLASS_FACTORY_PATHS[func_path]}")
        elif (
            func_path is not None and func_path.split(".")[0] == "enum" and any(k.arg == "type" for k in node.keywords)
        ):
            self.fail(node, "the functional Enum API with `type=` is forbidden: it builds a class on a run-time base")
        if func_path == "builtins.type" and len(node.args) == 1:
            problem = self._class_of_problem(node)
            if problem is not None:
                self.fail(node, f"`{_source(node)}`: {problem}")
        callee = node.func.value if isinstance(node.func, ast.Attribute) else node.func  # ``Host.scan(x)`` too
        if self._kernel_depth and isinstance(callee, ast.Name) and callee.id in self._plain_callables:
            self.fail(
                node,
                f"the kernel calls `{callee.id}`, which is plain Python; a @triton.jit kernel may call only "
                "triton.language functions and other @triton.jit functions",
            )
        if isinstance(node.func, ast.Subscript):  # kernel[grid](...): no plain function as a constexpr
            for value in [*node.args, *(k.value for k in node.keywords)]:
                if isinstance(value, ast.Name) and value.id in self._plain_callables:
                    self.fail(
                        node,
                        f"`{value.id}` (plain Python) is passed to a kernel launch; a kernel may call only "
                        "@triton.jit functions",
                    )
        for keyword in node.keywords:
            if keyword.arg in rules.FORBIDDEN_KEYWORDS:
                self.fail(node, f"the keyword `{keyword.arg}=` is forbidden: {rules.FORBIDDEN_KEYWORDS[keyword.arg]}")
        if func_path is not None:
            self.check_path(node, func_path)
        path = self.resolve(node)  # ``getattr(module, "name")`` is ``module.name``, maybe a module
        if path is not None and not path.startswith("builtins.") and self._escapes_to(node):
            self.report.escaping.add(path)
        for child in ast.iter_child_nodes(node):
            child._akg_parent = node  # type: ignore[attr-defined]
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and node.value in rules.FORBIDDEN_KEYWORDS:
            # ``**{"post_hook": f}`` or a dict built elsewhere and unpacked into a call
            self.fail(node, f"the name {node.value!r} is forbidden: {rules.FORBIDDEN_KEYWORDS[node.value]}")
        elif isinstance(node.value, str) and node.value in rules.TENSOR_SUBCLASS_HOOKS:
            # a class namespace built as a dict, a name looked up at run time
            self.fail(node, f"the name {node.value!r} is forbidden: {rules.TENSOR_SUBCLASS_HOOKS[node.value]}")

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if isinstance(node.op, ast.MatMult) and self._forward_depth and not self._kernel_depth:
            self.warn(node, "`@` in forward is a PyTorch matmul; do that work in your Triton kernel")
        self.generic_visit(node)

    def visit_Try(self, node: ast.Try) -> None:
        if node.handlers and not all(isinstance(s, (ast.Import, ast.ImportFrom, ast.Pass)) for s in node.body):
            self.fail(
                node,
                "try/except is forbidden outside import fallbacks (an except branch can hide a failing kernel "
                "behind a PyTorch fallback); let errors surface",
            )
        self.generic_visit(node)

    visit_TryStar = visit_Try  # noqa: N815

    def visit_Global(self, node: ast.Global) -> None:
        self.generic_visit(node)

    def visit_Match(self, node: ast.AST) -> None:
        self.fail(node, "`match` statements are forbidden (class patterns read attributes the checker cannot see)")

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for base in node.bases:
            path = self.resolve(base)
            name = path.rsplit(".", 1)[-1] if path else (base.id if isinstance(base, ast.Name) else None)
            if name == "Model" or (path and path.endswith(".Model")):
                self.fail(node, f"class `{node.name}` subclasses the reference `Model`; write your own nn.Module")
            problem = self._base_problem(base)
            if problem is not None:
                self.fail(
                    node,
                    f"class `{node.name}` derives from `{_source(base)}`: {problem} (a class may derive only from "
                    "nn.Module and other torch.nn modules, torch.autograd.Function, plain Python and typing classes, "
                    "and your own classes)",
                )
        for keyword in node.keywords:
            if keyword.arg == "metaclass":
                self.fail(node, f"class `{node.name}` sets a metaclass; metaclasses are forbidden")
        for stmt in node.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name in rules.FORBIDDEN_DUNDER_DEFS:
                self.fail(stmt, f"defining `{stmt.name}` is forbidden")
        self.generic_visit(node)

    def _base_problem(self, base: ast.expr) -> str | None:
        """Why ``base`` may not be a base class (see ``rules.base_class_problem``), or None."""
        if isinstance(base, ast.Name) and base.id in self._own_classes:
            return None  # the candidate's own class statement: checked on its own
        if isinstance(base, ast.Subscript):  # ``Generic[T]``, ``dict[str, int]``: the subscripted class
            return self._base_problem(base.value)
        if isinstance(base, ast.Call):  # ``namedtuple("P", "a b")``: a tuple class
            if self.resolve(base.func) in rules.TUPLE_CLASS_FACTORIES:
                return None
            return "a base computed by a call is forbidden"
        if isinstance(base, ast.Starred):
            return "bases unpacked from a sequence are forbidden"
        return rules.base_class_problem(self.resolve(base))

    def _class_of_problem(self, node: ast.expr) -> str | None:
        """For ``type(x)``, ``x.__class__`` and the builtin ``type`` itself: why this use is refused.

        They may be compared, printed, read from (``type(self)._cache``, ``x.__class__.__name__``)
        and called directly as ``type(x)``; calling them otherwise (``type(t)("X", (t,), {})``,
        ``x.__class__(...)``), passing them around or storing them reaches metaclasses, which
        build classes the checker cannot see."""
        parent = getattr(node, "_akg_parent", None)
        if isinstance(parent, ast.Attribute) and parent.value is node:
            if parent.attr == "__call__":
                return "calling a class's metaclass is forbidden"
            return None
        if isinstance(parent, (ast.Compare, ast.FormattedValue)):
            return None
        if isinstance(parent, ast.Subscript) and parent.slice is node:
            return None  # a lookup key: ``handlers[type(x)]``
        if isinstance(parent, ast.Call) and node in parent.args:
            if self.resolve(parent.func) in rules.CLASS_READING_BUILTINS:
                return None
        if isinstance(parent, ast.Call) and parent.func is node:
            if self.resolve(node) == "builtins.type" and len(parent.args) == 1 and not parent.keywords:
                return None  # ``type(x)`` itself
            return "calling a class's metaclass (or an object's class) is forbidden: it can build classes"
        if isinstance(parent, (ast.AnnAssign, ast.arg)) or (
            isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)) and parent.returns is node
        ):
            return None  # an annotation
        return "passing or storing an object's class (or `type`) is forbidden: it can build classes"

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        is_kernel = self.is_kernel(node)
        if is_kernel:
            self.report.kernels.append(node.name)
        is_forward = node.name == "forward"
        for decorator in node.decorator_list:
            self.visit(decorator)
        for default in [*node.args.defaults, *node.args.kw_defaults]:
            if default is not None:
                self.visit(default)
        # Annotations are expressions like any other: evaluated when the def runs (and, as strings,
        # by whatever library evaluates them later), so they get the same checks.
        arguments = node.args
        for arg in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg]:
            if arg is not None and arg.annotation is not None:
                arg.annotation._akg_parent = arg  # type: ignore[attr-defined]
                self.visit(arg.annotation)
        if node.returns is not None:
            node.returns._akg_parent = node  # type: ignore[attr-defined]
            self.visit(node.returns)
        is_triton = is_kernel
        is_constexpr_fn = not is_kernel and self.is_triton_function(node)
        in_class = isinstance(getattr(node, "_akg_parent", None), ast.ClassDef)
        params = [*node.args.posonlyargs, *node.args.args]
        self._method_self.append(params[0].arg if in_class and params else "")
        self._kernel_depth += int(is_triton)
        self._constexpr_depth += int(is_constexpr_fn)
        self._forward_depth += int(is_forward)
        for stmt in node.body:
            self.visit(stmt)
        self._constexpr_depth -= int(is_constexpr_fn)
        self._kernel_depth -= int(is_triton)
        self._forward_depth -= int(is_forward)
        self._method_self.pop()

    visit_AsyncFunctionDef = visit_FunctionDef  # noqa: N815

    def is_triton_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        """A kernel, or a function Triton evaluates at compile time (``@triton.constexpr_function``)."""
        if self.is_kernel(node):
            return True
        for decorator in node.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            if self.resolve(target) in rules.TRITON_CONSTEXPR_FUNCTION_PATHS:
                return True
        return False

    def is_kernel(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        for decorator in node.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            if self.resolve(target) in rules.TRITON_JIT_PATHS:
                return True
        return False

    # --- whole-module checks ------------------------------------------------------------------
    def finish(self) -> None:
        if self._warnings_cut:
            self.report.warnings.append(f"... and {self._warnings_cut} more warnings")
        has_model_new = False
        for node in self.tree.body:
            if isinstance(node, ast.ClassDef) and node.name == "ModelNew":
                has_model_new = True
            elif isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "ModelNew" for t in node.targets
            ):
                has_model_new = True
        if not has_model_new:
            self.fail(
                None,
                "no top-level `class ModelNew(nn.Module)`: define ModelNew with the same __init__ and forward "
                "signatures as the reference Model",
                ErrorType.MISSING_MODEL_NEW,
            )
        # ``kernel = triton.jit(fn)`` also counts.
        for node in self._nodes:
            if isinstance(node, ast.Call) and self.resolve(node.func) in rules.TRITON_JIT_PATHS and node.args:
                arg = node.args[0]
                if isinstance(arg, ast.Name):
                    self.report.kernels.append(arg.id)
        if not self.report.kernels:
            self.fail(
                None,
                "no Triton kernel: decorate at least one function with @triton.jit and launch it from "
                "ModelNew.forward as kernel[grid](...)",
                ErrorType.NO_TRITON_KERNEL,
            )


def names_in_use(tree: ast.Module) -> set[str]:
    """Every name the code mentions other than by importing it: read, assigned, deleted, declared
    ``global`` / ``nonlocal``, a parameter, a ``def`` / ``class`` name, an ``except ... as`` target.
    ``if __name__ == "__main__":`` blocks are left out (they never run)."""
    found: set[str] = set()
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and is_main_guard(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.arg):
            found.add(node.arg)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            found.update(node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            found.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            found.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            found.add(node.rest)
        stack.extend(ast.iter_child_nodes(node))
    return found


def _source(node: ast.AST, limit: int = 80) -> str:
    """The source text of ``node`` for a message, shortened."""
    try:
        text = ast.unparse(node)
    except (ValueError, RecursionError):
        return "..."
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def check_source(code: str) -> StaticReport:
    """Run the static stage on candidate source. Never raises on bad input."""
    if not code or not code.strip():
        report = StaticReport()
        report.violations.append(Violation(ErrorType.NO_CODE, "no code was submitted"))
        return report
    try:
        code.encode("utf-8")
    except UnicodeEncodeError:
        report = StaticReport()
        report.violations.append(Violation(ErrorType.SYNTAX, "the code is not valid UTF-8 text"))
        return report
    try:
        with _PARSE_LOCK:
            tree = ast.parse(code, filename="kernel.py")
    except SyntaxError as exc:
        report = StaticReport()
        detail = exc.msg or "invalid syntax"
        if exc.text:
            detail += f": {exc.text.strip()[:120]}"
        report.violations.append(Violation(ErrorType.SYNTAX, f"syntax error: {detail}", exc.lineno))
        return report
    except (ValueError, RecursionError, MemoryError) as exc:
        report = StaticReport()
        report.violations.append(Violation(ErrorType.SYNTAX, f"could not parse the code ({type(exc).__name__})"))
        return report
    if not tree.body:
        report = StaticReport()
        report.violations.append(
            Violation(ErrorType.NO_CODE, "the code has no statements (only comments or blank lines)")
        )
        return report
    checker = _Checker(tree)
    try:
        static_names.set_parents(tree)
        checker.collect_aliases()
        several, alternate_paths = static_names.alternate_import_paths(tree)
        for problem in static_names.binding_problems(tree) + several:
            checker.fail_line(problem.line, problem.message)
        for node, path in alternate_paths:  # the resolver follows one import of the name: each is checked
            checker.check_path(node, path)
        for problem in kernel_name_problems(tree, checker.is_kernel, checker.is_triton_function, checker.resolve):
            checker.fail_line(problem.line, problem.message)
        for stmt in tree.body:
            checker.visit(stmt)
        for problem in static_names.name_problems(tree):
            checker.fail_line(problem.line, problem.message, hack=problem.hack)
        checker.finish()
    except RecursionError:
        checker.fail(None, "the code is nested too deeply to check")
    return checker.report
