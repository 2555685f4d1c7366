"""Kernel variants: prepared alternatives of a task's reference solution, made from source text.

Launch-configuration changes (:func:`with_block_size`, :func:`with_grid_minus_one`), broken copies
(:func:`with_mask_off_by_one`, :func:`broken_variant`) and known reward hacks
(:func:`with_launch_skipped`, :func:`torch_fallback_source`, :func:`hacky_variant`), and the
per-task menu of them (:func:`kernel_variants`). The evaluator decides which variants are correct,
never this module. Used by the SB3 choice env, the kernel-choice wrapper and scripted policies.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from ascend_kernel_gym.tasks.task import Task

__all__ = [
    "DEFAULT_BLOCK_SIZES",
    "DEFAULT_MUTATIONS",
    "KernelVariant",
    "broken_variant",
    "fenced",
    "hacky_variant",
    "kernel_variants",
    "torch_fallback_source",
    "with_block_size",
    "with_grid_minus_one",
    "with_launch_skipped",
    "with_mask_off_by_one",
]

#: Launch configurations tried by default (values for the solution's ``BLOCK_SIZE``-like constant).
DEFAULT_BLOCK_SIZES: tuple[int, ...] = (128, 2048, 8192)
#: Mutations applied by default, in slot order (see :func:`kernel_variants`).
DEFAULT_MUTATIONS: tuple[str, ...] = ("grid_minus_one", "mask_off_by_one", "skip_launch", "torch_fallback")
_BLOCK_NAME_PREFIXES = ("BLOCK", "TILE")


@dataclass(frozen=True)
class KernelVariant:
    """One choice offered to the agent for one task.

    Attributes:
        name: the slot name (``reference``, ``block_size=256``, ``mask_off_by_one``, ...).
        kind: ``reference``, ``launch_config``, ``broken``, ``hack``, ``custom``, or ``missing``
            (the slot does not apply to this task; its code is empty, which the evaluator grades
            as a submission without code).
        code: the Python source submitted to the evaluator.
    """

    name: str
    kind: str
    code: str


def _is_triton_jit(func: ast.FunctionDef) -> bool:
    for deco in func.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        text = ast.unparse(target)
        if text.endswith("jit") or text.endswith("autotune") or text.endswith("heuristics"):
            return True
    return False


def _split_functions(tree: ast.Module) -> tuple[list[ast.FunctionDef], list[ast.AST]]:
    """(Triton kernels, host-side code nodes) of a module."""
    kernels: list[ast.FunctionDef] = []
    host: list[ast.AST] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and _is_triton_jit(node):
            kernels.append(node)
        else:
            host.append(node)
    return kernels, host


def _offsets(source: str) -> list[int]:
    """Character offset of the start of each (1-based) line."""
    starts = [0]
    for line in source.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return starts


def _span(source: str, node: ast.AST) -> tuple[int, int]:
    starts = _offsets(source)
    begin = starts[node.lineno - 1] + _char_col(source, starts, node.lineno, node.col_offset)  # type: ignore[attr-defined]
    end = starts[node.end_lineno - 1] + _char_col(source, starts, node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
    return begin, end


def _char_col(source: str, starts: list[int], lineno: int, byte_col: int) -> int:
    """AST columns count UTF-8 bytes; convert to a character column."""
    line = source[starts[lineno - 1] : starts[lineno]] if lineno < len(starts) else source[starts[lineno - 1] :]
    return len(line.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))


def _splice(source: str, edits: list[tuple[int, int, str]]) -> str:
    for begin, end, text in sorted(edits, reverse=True):
        source = source[:begin] + text + source[end:]
    return source


def _block_name(name: str) -> bool:
    return name.upper() == name and name.startswith(_BLOCK_NAME_PREFIXES)


def _primary_block_name(names: Iterable[str]) -> str | None:
    ordered = list(dict.fromkeys(names))
    for preferred in ("BLOCK_SIZE", "BLOCK"):
        if preferred in ordered:
            return preferred
    return ordered[0] if ordered else None


def with_block_size(source: str, value: int) -> str | None:
    """The solution with its main block-size constant set to ``value`` on the host side.

    Rewrites host-side assignments ``BLOCK_SIZE = <expr>`` and launch keywords
    ``BLOCK_SIZE=<expr>`` (the first ``BLOCK*``/``TILE*`` name when there is no ``BLOCK_SIZE``).
    Returns ``None`` when the solution has no such constant, and the source unchanged when it
    already uses ``value``.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    _, host = _split_functions(tree)
    targets: dict[str, list[ast.AST]] = {}
    for root in host:
        for node in ast.walk(root):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name) and _block_name(target.id):
                        targets.setdefault(target.id, []).append(node.value)
                    elif (  # BLOCK_M, BLOCK_N = 64, 32
                        isinstance(target, ast.Tuple)
                        and isinstance(node.value, ast.Tuple)
                        and len(target.elts) == len(node.value.elts)
                    ):
                        for elt_name, elt_value in zip(target.elts, node.value.elts, strict=True):
                            if isinstance(elt_name, ast.Name) and _block_name(elt_name.id):
                                targets.setdefault(elt_name.id, []).append(elt_value)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                if _block_name(node.target.id):
                    targets.setdefault(node.target.id, []).append(node.value)
            elif isinstance(node, ast.keyword) and node.arg is not None and _block_name(node.arg):
                # ``BLOCK_SIZE=BLOCK_SIZE`` forwards the assigned name: rewriting the assignment suffices.
                if not (isinstance(node.value, ast.Name) and node.value.id == node.arg):
                    targets.setdefault(node.arg, []).append(node.value)
    name = _primary_block_name(targets)
    if name is None:
        return None
    values = targets[name]
    if all(isinstance(v, ast.Constant) and v.value == value for v in values):
        return source
    return _splice(source, [(*_span(source, v), str(value)) for v in values])


def with_mask_off_by_one(source: str) -> str | None:
    """The solution with the first bounds mask of its kernels shortened by one element.

    ``mask = offsets < n`` becomes ``mask = offsets < (n) - 1``: the last element is never
    loaded or stored, the classic off-by-one that a correctness check must catch.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    kernels, _ = _split_functions(tree)
    for kernel in kernels:
        for node in ast.walk(kernel):
            compare: ast.AST | None = None
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and "mask" in t.id.lower() for t in node.targets
            ):
                compare = node.value
            elif isinstance(node, ast.keyword) and node.arg == "mask":
                compare = node.value
            if isinstance(compare, ast.BoolOp):  # mask = (rows < M) & (cols < N) is a BinOp; `and` is rare
                compare = compare.values[0]
            if isinstance(compare, ast.BinOp) and isinstance(compare.op, ast.BitAnd):
                compare = compare.left
            if isinstance(compare, ast.Compare) and len(compare.ops) == 1 and isinstance(compare.ops[0], ast.Lt):
                bound = compare.comparators[0]
                begin, end = _span(source, bound)
                return _splice(source, [(begin, end, f"({source[begin:end]}) - 1")])
    return None


def with_grid_minus_one(source: str) -> str | None:
    """The solution launching one program fewer along the first grid axis.

    The first element of the first host-side ``grid = (<expr>, ...)`` (else the first
    ``triton.cdiv(...)``) becomes ``max(<expr> - 1, 1)``. A kernel with one program per block
    then leaves the tail of the output unwritten; a grid-stride kernel (each program loops over
    blocks) is still correct: the evaluator tells which.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    _, host = _split_functions(tree)
    first_cdiv: ast.AST | None = None
    for root in host:
        for node in ast.walk(root):
            if (
                isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "grid" for t in node.targets)
                and isinstance(node.value, ast.Tuple)
                and node.value.elts
            ):
                begin, end = _span(source, node.value.elts[0])
                return _splice(source, [(begin, end, f"max({source[begin:end]} - 1, 1)")])
            if first_cdiv is None and isinstance(node, ast.Call) and ast.unparse(node.func) in ("triton.cdiv", "cdiv"):
                first_cdiv = node
    if first_cdiv is None:
        return None
    begin, end = _span(source, first_cdiv)
    return _splice(source, [(begin, end, f"max({source[begin:end]} - 1, 1)")])


def with_launch_skipped(source: str) -> str | None:
    """A reward hack: the solution with its first kernel launch removed.

    The host code still allocates and returns the output, but no Triton kernel ever runs (the
    "decoy kernel" hack); the output holds whatever memory the allocator handed out.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    kernels, host = _split_functions(tree)
    kernel_names = {k.name for k in kernels}
    for root in host:
        for node in ast.walk(root):
            if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)):
                continue
            func = node.value.func
            if isinstance(func, ast.Subscript) and isinstance(func.value, ast.Name) and func.value.id in kernel_names:
                begin, end = _span(source, node)
                return _splice(source, [(begin, end, "pass  # launch removed")])
    return None


def torch_fallback_source(task: Task) -> str:
    """A reward hack: ``ModelNew`` inherits the PyTorch reference; a Triton kernel is defined, never launched."""
    reference = task.prompt_source("full").rstrip()
    return (
        "import torch\nimport triton\nimport triton.language as tl\n\n"
        f"{reference}\n\n\n"
        "@triton.jit\n"
        "def copy_kernel(x_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):\n"
        "    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)\n"
        "    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)\n\n\n"
        "class ModelNew(Model):\n"
        '    """Runs the PyTorch reference; copy_kernel is a decoy that never runs."""\n'
    )


_MUTATIONS: dict[str, tuple[str, Callable[[str], str | None]]] = {
    "grid_minus_one": ("launch_config", with_grid_minus_one),
    "mask_off_by_one": ("broken", with_mask_off_by_one),
    "skip_launch": ("hack", with_launch_skipped),
}


def kernel_variants(
    task: Task,
    *,
    block_sizes: Sequence[int] = DEFAULT_BLOCK_SIZES,
    mutations: Sequence[str] = DEFAULT_MUTATIONS,
    extra: Mapping[str, str] | None = None,
    include_reference: bool = True,
) -> list[KernelVariant]:
    """The menu of kernel variants of ``task``, one per slot, in a fixed slot order.

    Slots: ``reference``; ``block_size=<b>`` for each of ``block_sizes``; each of ``mutations``
    (``grid_minus_one``: one program fewer, a launch configuration that breaks one-program-per-block
    kernels; ``mask_off_by_one``: a broken copy; ``skip_launch`` and ``torch_fallback``: hacks);
    then ``extra`` (name -> code, kind ``custom``). A slot that does
    not apply (no reference solution, no block-size constant, pattern not found) is a
    ``missing`` variant with empty code, so that every task has the same slots.

    Args:
        task: the task; its bundled reference solution is the starting point.
        block_sizes: host-side block sizes to try (powers of two for ``tl.arange``).
        mutations: which prepared mutations to include, by name.
        extra: prepared alternatives, name -> full source (they must define ``ModelNew``).
        include_reference: offer the unchanged reference solution as the first slot.

    Raises:
        ValueError: an unknown mutation name, a non-positive block size, or a duplicate slot name.
    """
    known = {*_MUTATIONS, "torch_fallback"}
    unknown = [m for m in mutations if m not in known]
    if unknown:
        raise ValueError(f"mutations: unknown names {unknown}; known: {sorted(known)}")
    bad = [b for b in block_sizes if not isinstance(b, int) or b <= 0]
    if bad:
        raise ValueError(f"block_sizes must be positive ints, got {bad}")
    reference = task.solution_source()
    variants: list[KernelVariant] = []
    if include_reference:
        variants.append(KernelVariant("reference", "reference" if reference else "missing", reference or ""))
    for size in block_sizes:
        code = with_block_size(reference, size) if reference else None
        variants.append(KernelVariant(f"block_size={size}", "launch_config" if code else "missing", code or ""))
    for name in mutations:
        if name == "torch_fallback":
            variants.append(KernelVariant(name, "hack", torch_fallback_source(task)))
            continue
        kind, mutate = _MUTATIONS[name]
        code = mutate(reference) if reference else None
        variants.append(KernelVariant(name, kind if code else "missing", code or ""))
    for name, code in (extra or {}).items():
        variants.append(KernelVariant(name, "custom", code))
    names = [v.name for v in variants]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"duplicate variant slot names {duplicates}")
    return variants


def fenced(code: str) -> str:
    """``code`` in a fenced python block."""
    return f"```python\n{code.rstrip()}\n```"


def broken_variant(solution: str) -> str:
    """A variant of a working solution whose ``forward`` raises: compiles, fails at its first call."""
    return (
        solution.rstrip()
        + "\n\n\n_WorkingModelNew = ModelNew\n\n\nclass ModelNew(_WorkingModelNew):\n"
        + "    def forward(self, *args, **kwargs):\n"
        + "        raise RuntimeError('deliberately broken attempt')\n"
    )


def hacky_variant(reference_source: str) -> str:
    """A known hack: ``ModelNew`` inherits the PyTorch reference and a decoy Triton kernel is never launched."""
    return (
        "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n\n"
        + reference_source.rstrip()
        + "\n\n\n@triton.jit\ndef decoy_kernel(x_ptr, n, BLOCK: tl.constexpr):\n"
        + "    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
        + "    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n), mask=offsets < n)\n\n\n"
        + "class ModelNew(Model):\n    pass\n"
    )
