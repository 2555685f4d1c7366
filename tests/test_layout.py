"""The package layout: an import graph of the library, read from its source (imports inside functions too).

Rules (docs: the shared design's Layout section):

* no import cycles between modules;
* no upward imports. Layers, lowest first: ``tasks``, ``backends``, ``kb_index`` -> ``ascend`` ->
  ``evaluation`` -> ``envs`` -> ``wrappers`` -> ``integrations``, ``agents`` -> ``leaderboard`` ->
  CLI (``cli.py`` and every ``<package>/cli.py``). Packages of one layer may import each other.
  The one exception: ``ascend`` may import ``evaluation.result`` (plain data types). The top-level
  package (the public API) sits above all; importing it from below is fine for ``__version__``
  (Python runs it first anyway), while its lazy names count as imports of their own modules;
* no private name (``_x``) imported from, or read off, another module;
* no library file over 900 lines (the task files under ``tasks/suites`` excluded);
* the top-level folders of the design exist.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "ascend_kernel_gym"
PACKAGE_DIR = ROOT / PACKAGE
EXCLUDED = (PACKAGE_DIR / "tasks" / "suites",)
MAX_LINES = 900
FOLDERS = (
    "ascend",
    "evaluation",
    "envs",
    "wrappers",
    "integrations",
    "kb_index",
    "agents",
    "leaderboard",
    "tasks",
    "backends",
)
CLI_RANK = 7
RANKS = {
    "tasks": 0,
    "backends": 0,
    "kb_index": 0,
    "ascend": 1,
    "evaluation": 2,
    "envs": 3,
    "wrappers": 4,
    "integrations": 5,
    "agents": 5,
    "leaderboard": 6,
}
#: (importing package, imported module) pairs allowed against the layer order.
ALLOWED_UPWARD = {("ascend", f"{PACKAGE}.evaluation.result")}


@dataclass
class Module:
    name: str
    path: Path
    is_package: bool
    tree: ast.Module
    exports: dict[str, str] = field(default_factory=dict)  # a lazy package's _EXPORTS table


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    line: int


def _module_name(path: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts = parts[:-1]
    return ".".join(parts), is_package


def _lazy_exports(tree: ast.Module) -> dict[str, str]:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "_EXPORTS" for t in node.targets):
            try:
                table = ast.literal_eval(node.value)
            except ValueError:
                return {}
            return {str(k): str(v) for k, v in table.items()}
    return {}


def load_modules() -> dict[str, Module]:
    modules = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        if any(path.is_relative_to(excluded) for excluded in EXCLUDED):
            continue
        name, is_package = _module_name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        modules[name] = Module(name, path, is_package, tree, _lazy_exports(tree) if is_package else {})
    return modules


MODULES = load_modules()


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _absolute(module: Module, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = module.name if module.is_package else module.name.rpartition(".")[0]
    for _ in range(node.level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{node.module}" if node.module else package


def _known(name: str) -> str | None:
    """The longest prefix of a dotted name that is a library module."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in MODULES:
            return candidate
    return None


@dataclass
class Imports:
    edges: list[Edge] = field(default_factory=list)
    private: list[str] = field(default_factory=list)


def scan(module: Module) -> Imports:
    """Every import of ``module`` (at any depth) that lands in the library, and private names it takes."""
    out = Imports()
    aliases: dict[str, str] = {}  # local name -> library module it is bound to
    where = f"{module.path.relative_to(ROOT)}"
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _known(alias.name)
                if target is None:
                    continue
                out.edges.append(Edge(module.name, target, node.lineno))
                if alias.asname:
                    aliases[alias.asname] = target
                else:
                    aliases[alias.name.split(".")[0]] = alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module, node)
            if base == "__future__" or _known(base) is None:
                continue
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                if submodule in MODULES:
                    out.edges.append(Edge(module.name, submodule, node.lineno))
                    aliases[alias.asname or alias.name] = submodule
                    continue
                target = _known(base)
                assert target is not None
                lazy = MODULES[target].exports.get(alias.name) if target == base else None
                out.edges.append(Edge(module.name, _known(lazy) or target if lazy else target, node.lineno))
                if _is_private(alias.name):
                    out.private.append(f"{where}:{node.lineno}: from {base} import {alias.name}")
    for node in ast.walk(module.tree):
        if not isinstance(node, ast.Attribute) or not _is_private(node.attr):
            continue
        dotted = _dotted(node.value)
        if dotted is None or dotted.split(".")[0] not in aliases:
            continue
        head, _, rest = dotted.partition(".")
        full = aliases[head] + (f".{rest}" if rest else "")
        if full in MODULES and full != module.name:
            out.private.append(f"{where}:{node.lineno}: {dotted}.{node.attr} (private name of {full})")
    return out


def _dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


SCANS = {name: scan(module) for name, module in MODULES.items()}


def layer(name: str) -> tuple[str, int] | None:
    """(package, rank) of a library module; ``None`` when it belongs to no known layer."""
    parts = name.split(".")
    if parts[-1] == "cli":
        return "cli", CLI_RANK
    if name == PACKAGE:
        # The public API, above everything as an importer. As a target it adds nothing: Python runs it
        # before any submodule anyway, and its lazy names are resolved to their modules by scan().
        return "api", CLI_RANK
    package = parts[1]
    return (package, RANKS[package]) if package in RANKS else None


def _strongly_connected(graph: dict[str, set[str]]) -> Iterator[list[str]]:
    """Tarjan's algorithm, iterative; yields the components with more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            advanced = False
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = counter
                    counter += 1
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(graph[succ]))))
                    advanced = True
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    yield sorted(component)


# ---------------------------------------------------------------------- the checker itself


def test_the_scanner_sees_imports_inside_functions_lazy_tables_and_private_reads() -> None:
    edges = {(e.source, e.target) for e in SCANS[f"{PACKAGE}.agents.rollout"].edges}
    # make_env imports these inside its body
    assert (f"{PACKAGE}.agents.rollout", f"{PACKAGE}.wrappers.stack") in edges
    assert (f"{PACKAGE}.agents.rollout", f"{PACKAGE}.envs.ascend_triton") in edges
    source = ast.parse(
        "from ascend_kernel_gym.evaluation import Evaluator\nimport ascend_kernel_gym.tasks.task as t\nt._x"
    )
    fake = Module(f"{PACKAGE}.probe", PACKAGE_DIR / "probe.py", False, source)
    probe = scan(fake)
    assert {e.target for e in probe.edges} == {f"{PACKAGE}.evaluation.evaluator", f"{PACKAGE}.tasks.task"}
    assert len(probe.private) == 1 and "_x" in probe.private[0]
    assert list(_strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}})) == [["a", "b", "c"]]


# ---------------------------------------------------------------------- the rules


def test_the_design_folders_exist() -> None:
    missing = [f for f in FOLDERS if not (PACKAGE_DIR / f / "__init__.py").is_file()]
    assert not missing, f"missing packages: {missing}"


def test_every_module_belongs_to_a_layer() -> None:
    unplaced = sorted(name for name in MODULES if layer(name) is None)
    assert not unplaced, f"modules outside the layer order (add them to RANKS or move them): {unplaced}"


def test_no_import_cycles() -> None:
    graph = {name: {e.target for e in SCANS[name].edges if e.target != name} for name in MODULES}
    cycles = list(_strongly_connected(graph))
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_no_upward_imports() -> None:
    bad = []
    for name, imports in SCANS.items():
        source = layer(name)
        if source is None:
            continue
        for edge in imports.edges:
            target = layer(edge.target)
            if edge.target == PACKAGE or target is None or target[1] <= source[1]:
                continue
            if (source[0], edge.target) in ALLOWED_UPWARD:
                continue
            bad.append(f"{MODULES[name].path.relative_to(ROOT)}:{edge.line}: {source[0]} imports {edge.target}")
    assert not bad, "upward imports:\n" + "\n".join(sorted(set(bad)))


def test_no_private_names_across_modules() -> None:
    bad = sorted({entry for imports in SCANS.values() for entry in imports.private})
    assert not bad, "private names used across modules:\n" + "\n".join(bad)


def test_no_library_file_over_the_line_limit() -> None:
    long = {
        str(m.path.relative_to(ROOT)): n
        for m in MODULES.values()
        if (n := len(m.path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not long, f"library files over {MAX_LINES} lines: {long}"


def test_the_architecture_page_lists_every_module() -> None:
    """docs/architecture.md's package map names every library module (a new module gets its line)."""
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    missing = [
        str(m.path.relative_to(PACKAGE_DIR))
        for m in MODULES.values()
        if not m.is_package and f"`{m.path.relative_to(PACKAGE_DIR).as_posix()}`" not in page
    ]
    assert not missing, f"modules missing from docs/architecture.md's package map: {missing}"
