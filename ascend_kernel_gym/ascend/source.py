"""Facts read from a candidate's source: its Triton aliases, module constants, kernels and launch sites.

:func:`parse_module` reads the module once (no code runs); the helpers derive per-kernel facts the
rules need without launch records: the parameters used as pointers, the constexpr values at the
first launch site and whether a kernel (or a jit helper it calls) uses ``tl.dot``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from ascend_kernel_gym.ascend.values import ATOMICS, UNKNOWN


@dataclass
class ParsedKernel:
    """One ``@triton.jit`` function: its parameters, constexpr parameters, defaults and autotune configs."""

    name: str
    node: ast.FunctionDef
    params: list[str]
    constexpr_params: set[str]
    defaults: dict[str, Any]
    autotune_configs: list[dict[str, Any]] = field(default_factory=list)
    autotune_warps: bool = False
    is_launched: bool = False


@dataclass
class ParsedModule:
    """A parsed candidate: Triton aliases, module constants, kernels, their launch sites, all functions."""

    tree: ast.Module
    aliases: dict[str, str]  # local name -> "tl" / "triton" / "tl.math"
    constants: dict[str, Any]
    kernels: dict[str, ParsedKernel]
    call_sites: dict[str, list[ast.Call]]
    functions: dict[str, ast.FunctionDef]


def dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for a name or attribute chain, else ``None``."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def normalise(name: str | None, aliases: dict[str, str]) -> str | None:
    """``triton.language.x`` / ``tl.x`` / aliased names -> ``tl.x``; ``triton.x`` stays."""
    if not name:
        return name
    head, _, rest = name.partition(".")
    target = aliases.get(head)
    if target is None:
        return name
    full = f"{target}.{rest}" if rest else target
    if full.startswith("triton.language"):
        full = "tl" + full[len("triton.language") :]
    return full


def literal(node: ast.AST | None, constants: dict[str, Any] | None = None) -> Any:
    """The literal value of ``node`` (or of a module constant it names), else :data:`UNKNOWN`."""
    if node is None:
        return UNKNOWN
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        pass
    if constants is not None and isinstance(node, ast.Name) and node.id in constants:
        return constants[node.id]
    return UNKNOWN


def _is_jit_decorator(node: ast.expr, aliases: dict[str, str]) -> bool:
    target = node.func if isinstance(node, ast.Call) else node
    name = normalise(dotted(target), aliases) or ""
    return name.split(".")[-1] in ("jit",) and (name.startswith("triton") or name == "jit" or name.startswith("tl"))


def parse_module(source: str) -> ParsedModule | None:
    """Parse a candidate's source without running it; ``None`` when it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "triton" or a.name.startswith("triton."):
                    aliases[(a.asname or a.name).split(".")[0] if a.asname is None else a.asname] = (
                        a.name if a.asname else "triton"
                    )
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("triton"):
            for a in node.names:
                aliases[a.asname or a.name] = f"{node.module}.{a.name}"
    aliases.setdefault("tl", "triton.language")
    constants: dict[str, Any] = {}
    functions: dict[str, ast.FunctionDef] = {}
    kernels: dict[str, ParsedKernel] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = node.value
            if isinstance(value, ast.Call) and (normalise(dotted(value.func), aliases) or "").endswith("constexpr"):
                value = value.args[0] if value.args else value
            lit = literal(value)
            if lit is not UNKNOWN:
                constants[node.targets[0].id] = lit
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            functions.setdefault(node.name, node)
            if any(_is_jit_decorator(d, aliases) for d in node.decorator_list):
                kernels[node.name] = _make_kernel(node, aliases, constants)
    call_sites: dict[str, list[ast.Call]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript):
            name = dotted(node.func.value)
            if name in kernels:
                call_sites.setdefault(name, []).append(node)
                kernels[name].is_launched = True
    return ParsedModule(tree, aliases, constants, kernels, call_sites, functions)


def _make_kernel(node: ast.FunctionDef, aliases: dict[str, str], constants: dict[str, Any]) -> ParsedKernel:
    args = node.args.args + node.args.kwonlyargs
    params = [a.arg for a in args]
    constexpr = set()
    for a in args:
        ann = a.annotation
        if ann is not None:
            text = dotted(ann) or (ann.value if isinstance(ann, ast.Constant) else "") or ""
            if str(text).split(".")[-1] == "constexpr":
                constexpr.add(a.arg)
    defaults: dict[str, Any] = {}
    positional = node.args.args
    for a, d in zip(positional[len(positional) - len(node.args.defaults) :], node.args.defaults, strict=False):
        defaults[a.arg] = literal(d, constants)
    for a, d in zip(node.args.kwonlyargs, node.args.kw_defaults, strict=False):
        if d is not None:
            defaults[a.arg] = literal(d, constants)
    kernel = ParsedKernel(node.name, node, params, constexpr, defaults)
    for deco in node.decorator_list:
        if not isinstance(deco, ast.Call):
            continue
        name = normalise(dotted(deco.func), aliases) or ""
        if not name.endswith("autotune"):
            continue
        for kw in deco.keywords:
            if kw.arg == "configs" and isinstance(kw.value, (ast.List, ast.Tuple)):
                for cfg in kw.value.elts:
                    if not isinstance(cfg, ast.Call):
                        continue
                    values = literal(cfg.args[0], constants) if cfg.args else UNKNOWN
                    if isinstance(values, dict):
                        kernel.autotune_configs.append(values)
                    for ckw in cfg.keywords:
                        if ckw.arg in ("num_warps", "num_stages"):
                            kernel.autotune_warps = True
                        if ckw.arg == "kwargs":
                            lit = literal(ckw.value, constants)
                            if isinstance(lit, dict):
                                kernel.autotune_configs.append(lit)
    return kernel


def snippet(node: ast.AST) -> str:
    """The source of ``node``, cut to 70 characters, for messages."""
    try:
        text = ast.unparse(node)
    except Exception:  # noqa: BLE001
        return "?"
    return text if len(text) <= 70 else text[:67] + "..."


def pointer_params(module: ParsedModule, kernel: ParsedKernel) -> list[str]:
    """Parameters used as pointers (roots of tl.load / tl.store / atomics / block pointers), in order."""
    assigned: dict[str, ast.expr] = {}
    for node in ast.walk(kernel.node):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            assigned.setdefault(node.targets[0].id, node.value)
    roots: set[str] = set()

    def root(expr: ast.expr | None, depth: int = 0) -> None:
        if expr is None or depth > 12:
            return
        if isinstance(expr, ast.Name):
            if expr.id in kernel.params:
                roots.add(expr.id)
            elif expr.id in assigned:
                root(assigned[expr.id], depth + 1)
        elif isinstance(expr, ast.BinOp):
            root(expr.left, depth + 1)  # the pointer leads its offsets: ptr + offs (+ more offsets)
        elif isinstance(expr, ast.Subscript):
            root(expr.value, depth + 1)
        elif isinstance(expr, ast.Call):
            name = normalise(dotted(expr.func), module.aliases) or ""
            if name in ("tl.make_block_ptr", "tl.advance", "tl.multiple_of") and expr.args:
                root(expr.args[0], depth + 1)
            for kw in expr.keywords:
                if kw.arg == "base":
                    root(kw.value, depth + 1)

    for node in ast.walk(kernel.node):
        if isinstance(node, ast.Call):
            name = normalise(dotted(node.func), module.aliases) or ""
            leaf = name.split(".")[-1] if name.startswith("tl.") else ""
            if leaf in ("load", "store", "make_block_ptr", "make_tensor_descriptor") or leaf in ATOMICS:
                first = node.args[0] if node.args else None
                if first is None:
                    first = next((k.value for k in node.keywords if k.arg in ("pointer", "base")), None)
                root(first)
    named = {p for p in kernel.params if p.lower().endswith("ptr")}
    ordered = [p for p in kernel.params if p in roots or p in named]
    return [p for p in ordered if p not in kernel.constexpr_params]


def call_site_constexprs(module: ParsedModule, kernel: ParsedKernel) -> dict[str, Any]:
    """Literal constexpr values at the first launch site (``k[grid](..., BLOCK=1024)``), following a
    ``BLOCK = 1024`` assignment in the enclosing function."""
    sites = module.call_sites.get(kernel.name) or []
    if not sites:
        return {}
    site = sites[0]
    local: dict[str, Any] = dict(module.constants)
    for fn in module.functions.values():
        if any(n is site for n in ast.walk(fn)):
            for node in ast.walk(fn):
                if isinstance(node, ast.Assign):
                    targets = node.targets[0]
                    if isinstance(targets, ast.Name):
                        lit = literal(node.value, local)
                        if lit is not UNKNOWN:
                            local.setdefault(targets.id, lit)
                    elif isinstance(targets, ast.Tuple) and isinstance(node.value, ast.Tuple):
                        for t, v in zip(targets.elts, node.value.elts, strict=False):
                            lit = literal(v, local)
                            if isinstance(t, ast.Name) and lit is not UNKNOWN:
                                local.setdefault(t.id, lit)
            break
    values: dict[str, Any] = {}
    for kw in site.keywords:
        if kw.arg in kernel.constexpr_params:
            lit = literal(kw.value, local)
            if lit is not UNKNOWN:
                values[kw.arg] = lit
    positional = [p for p in kernel.params]
    for p, a in zip(positional, site.args, strict=False):
        if p in kernel.constexpr_params:
            lit = literal(a, local)
            if lit is not UNKNOWN:
                values[p] = lit
    return values


def kernel_uses_dot(module: ParsedModule, kernel: ParsedKernel, seen: set[str] | None = None) -> bool:
    """Whether ``kernel`` or a jit function it calls uses ``tl.dot`` / ``tl.dot_scaled`` (cube cores)."""
    seen = seen or set()
    seen.add(kernel.name)
    for node in ast.walk(kernel.node):
        if isinstance(node, ast.Call):
            name = normalise(dotted(node.func), module.aliases) or ""
            if name in ("tl.dot", "tl.dot_scaled"):
                return True
            callee = module.kernels.get(name)
            if callee is not None and callee.name not in seen and kernel_uses_dot(module, callee, seen):
                return True
    return False
