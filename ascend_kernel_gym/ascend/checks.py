"""Ascend rule checks: triton-ascend's documented limits, checked on any backend.

The checks read the candidate's source (its ``@triton.jit`` functions, their launch sites and
``ModelNew``) and the evaluator's launch records (grid, constexpr values, ``num_warps`` /
``num_stages``, shapes and dtypes of tensor arguments). Inside each kernel a small abstract
interpreter follows shapes, dtypes and a few flags (loaded from memory, made by ``tl.where``,
made by ``//`` / ``%``, made by ``tl.dot``) through assignments, so that rules such as "int64
arithmetic on index tensors" or "UB footprint of the live tiles" can be decided without running
anything.

Entry points:

- :func:`run_ascend_checks` ``(source, launches, chip) -> list[dict]``: one dict per finding with
  ``rule, severity ("error" | "warning"), value, limit, message, fix, kb_id`` (plus ``kernel`` and
  ``line`` where known). The evaluator calls it after the correctness stage; in ``enforce`` mode a
  finding of severity ``error`` fails the turn with ``ErrorType.ASCEND_CONSTRAINT``.
- :func:`format_ascend_report` ``(result) -> str``: the findings and the cost-model estimate of an
  :class:`~ascend_kernel_gym.evaluation.result.EvalResult` as plain text (``akg check``).
- :func:`capture_launches` ``(task, code, profile)``: the launch records of one forward call
  without running any kernel (tensors on the ``meta`` device), for checking a kernel at the
  ``full`` shapes on a machine that cannot run them.

Every rule is listed in :data:`RULES` with its knowledge-base entry; docs/ascend.md has the table.
This module imports neither torch nor triton at import time.
"""

from __future__ import annotations

import ast
import contextlib
import math
import operator
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ascend_kernel_gym.ascend.chips import ChipProfile, resolve_chip
from ascend_kernel_gym.evaluation.result import LaunchRecord

__all__ = [
    "RULES",
    "Rule",
    "capture_launches",
    "format_ascend_report",
    "run_ascend_checks",
]

ERROR = "error"
WARNING = "warning"
#: Few bytes per program: below this a program's transfer is shorter than one round's startup.
FEW_BYTES_PER_PROGRAM = 32 * 1024
#: Rounds of programs over the parallel slots tolerated before ``grid_oversubscribed`` fires.
MAX_ROUNDS = 2
MAX_ARANGE = 1_048_576
MAX_TILE_ELEMENTS = 65_536


@dataclass(frozen=True)
class Rule:
    """One Ascend rule: what it detects, its default severity, the fix, and its KB entry."""

    id: str
    severity: str
    kb_id: str
    detects: str
    fix: str
    facts: str


def _rules(*rules: Rule) -> dict[str, Rule]:
    return {r.id: r for r in rules}


RULES: dict[str, Rule] = _rules(
    Rule(
        "max_grid",
        ERROR,
        "grid-uint16-max-coredim",
        "total number of programs (product of the grid) above the chip's limit of 65535",
        "launch about as many programs as cores and loop over blocks inside the kernel "
        "(for b in range(pid, n_blocks, tl.num_programs(0))), or raise BLOCK so that cdiv(N, BLOCK) <= 65535",
        "11, 76",
    ),
    Rule(
        "grid_oversubscribed",
        WARNING,
        "grid-persistent-physical-cores",
        f"more than {MAX_ROUNDS} rounds of programs over the parallel cores (vector cores, or cube cores for "
        f"kernels with tl.dot) while each program moves under {FEW_BYTES_PER_PROGRAM // 1024} KiB of its "
        "launch's tensor bytes: every extra round pays a startup cost",
        "use grid=(number of cores,) and a grid-stride loop over blocks inside the kernel",
        "8, 9, 13",
    ),
    Rule(
        "ub_overflow",
        ERROR,
        "ub-overflow-compile-error",
        "one loaded tile x the multibuffer factor (2 when multibuffer is on by default) is larger than the "
        "Unified Buffer: a certain 'ub overflow' compile error",
        "halve BLOCK until the tile fits, loop over sub-blocks (BLOCK_SUB of 1024-4096 elements), or pass "
        "multibuffer=False",
        "15, 17, 18, 19",
    ),
    Rule(
        "ub_pressure",
        WARNING,
        "ub-sizing-estimate",
        "estimated UB footprint of the live tiles (loaded tiles x multibuffer factor + other named vector "
        "tiles) above the Unified Buffer",
        "shrink the block sizes or split the row into sub-blocks processed in a loop",
        "15, 17, 19, 20",
    ),
    Rule(
        "l0_overflow",
        WARNING,
        "l0-buffer-limits",
        "tl.dot operand or accumulator tile larger than L0A / L0B (64 KB) or L0C (128 KB)",
        "use smaller BLOCK_M / BLOCK_N / BLOCK_K (e.g. 128 x 256 x 64 for fp16) so m*k*size(A), k*n*size(B) "
        "<= 64 KB and m*n*4 <= 128 KB",
        "16, 45",
    ),
    Rule(
        "int64_index",
        WARNING,
        "int64-scalar-fallback",
        "int64 arithmetic on tensors (e.g. offsets cast with .to(tl.int64) / tl.int64 then added or "
        "multiplied): the vector unit has no int64 add, so it falls back to the scalar unit",
        "keep offsets in int32 (tl.arange is int32) while sizes fit in 2^31; compute a per-program int64 "
        "base as a scalar only when needed",
        "30, 35",
    ),
    Rule(
        "num_warps_stages",
        WARNING,
        "autotune-no-warps-stages",
        "num_warps / num_stages in a launch or an autotune config: they are not tuning knobs on Ascend",
        "drop num_warps / num_stages; tune block sizes (and multibuffer) instead",
        "14",
    ),
    Rule(
        "dot_fp16_accumulator",
        ERROR,
        "dot-dtypes-and-accumulator",
        "tl.dot accumulating in fp16 / bf16 (acc tile or out_dtype): Ascend accumulates in fp32 or int32 only",
        "acc = tl.zeros((BM, BN), dtype=tl.float32); acc = tl.dot(a, b, acc); cast once when storing",
        "32, 43",
    ),
    Rule(
        "dot_block_not_multiple_of_16",
        WARNING,
        "cube-tiles-multiple-of-16",
        "tl.dot tile dimensions (M, N or K) that are not multiples of 16 (the cube unit is 16x16x16)",
        "use BLOCK_M / BLOCK_N / BLOCK_K multiples of 16 and mask the tails",
        "43",
    ),
    Rule(
        "dot_options",
        WARNING,
        "dot-input-precision",
        "tl.dot options triton-ascend does not support: max_num_imprecise_acc, input_precision other than "
        "'ieee' / 'hf32'",
        "drop max_num_imprecise_acc; use input_precision='ieee' (default) or 'hf32'",
        "32, 33",
    ),
    Rule(
        "dot_scaled",
        WARNING,
        "dot-scaled-limits",
        "tl.dot_scaled: no fp8 / fp4 operands on Ascend, int8 scales only",
        "use tl.dot on fp16 / bf16 operands",
        "34",
    ),
    Rule(
        "last_dim_alignment",
        WARNING,
        "align-last-dim-32-bytes",
        "a tensor argument whose last dimension is not a multiple of 32 bytes (vector kernels) or 512 bytes "
        "(kernels with tl.dot): the compiler pads it, which costs UB and time",
        "view the tensor as 1-D and index it flat, or pad the last dimension to an aligned size",
        "21, 22",
    ),
    Rule(
        "tensor_slicing",
        ERROR,
        "no-python-tensor-slicing",
        "Python indexing or slicing of a Triton tensor inside a kernel (t[0], t[i:j]); only [:, None]-style "
        "broadcasting is supported",
        "use masks and tl.where / tl.sum to pick elements, or triton-ascend's extract_slice / get_element",
        "73",
    ),
    Rule(
        "while_loop",
        WARNING,
        "no-return-break-while",
        "a while loop inside a kernel (poorly supported on Ascend; version-dependent)",
        "use for i in range(MAX_ITERS): with an if on the condition",
        "72",
    ),
    Rule(
        "break_continue",
        ERROR,
        "no-return-break-while",
        "break or continue inside a kernel (not supported by the compiler)",
        "loop over a fixed range and guard the body with an if / a mask",
        "72",
    ),
    Rule(
        "early_return",
        WARNING,
        "no-return-break-while",
        "a return statement inside a branch or loop of a kernel (early exit; version-dependent)",
        "guard the work with an if / masks instead of returning early",
        "72",
    ),
    Rule(
        "where_pointer",
        WARNING,
        "no-where-pointer-offsets",
        "tl.where used to compute pointers or pointer offsets (version-dependent on Ascend)",
        "choose the pointer with a static if / else on a scalar, or load both and select the values",
        "75",
    ),
    Rule(
        "dtype_call_cast",
        ERROR,
        "scalar-cast-and-constexpr",
        "a cast written as tl.float16(x) (calling a dtype)",
        "write x.to(tl.float16)",
        "74",
    ),
    Rule(
        "constexpr_in_body",
        WARNING,
        "scalar-cast-and-constexpr",
        "tl.constexpr(...) used inside a kernel body; tl.constexpr belongs in the signature",
        "make the value a `NAME: tl.constexpr` parameter and pass it at launch",
        "74",
    ),
    Rule(
        "arange_too_long",
        ERROR,
        "arange-rules-ascend",
        f"tl.arange with a negative start or a length above {MAX_ARANGE:,}",
        "use a smaller block and loop over blocks",
        "35",
    ),
    Rule(
        "tile_too_large",
        WARNING,
        "tile-and-grid-size-caps",
        f"a tile of {MAX_TILE_ELEMENTS:,} elements or more",
        "keep each tile under 65536 elements (start with 1024-4096) and loop",
        "76, 19",
    ),
    Rule(
        "unsupported_dtype",
        ERROR,
        "unsupported-unsigned-and-fp64",
        "fp64 or unsigned integer types in a kernel or its tensor arguments (most tl ops reject them on A2/A3)",
        "compute in fp32 (and int32); convert on the host if the task's data is fp64",
        "31",
    ),
    Rule(
        "atomic_unsupported",
        ERROR,
        "atomics-limits",
        "an atomic that Ascend does not support: atomic_add on int64 / fp64, atomic_max / min on int64, or "
        "sem other than 'acq_rel' / scope other than 'gpu'",
        "accumulate in int32 / fp32 and keep the default sem and scope",
        "36",
    ),
    Rule(
        "sort_dtype",
        ERROR,
        "sort-dtype-limits",
        "tl.sort on int32, int64, uint8, fp64 or bool data",
        "sort fp16 / fp32 keys (cast before sorting)",
        "37",
    ),
    Rule(
        "item_in_forward",
        WARNING,
        "kernel-anti-patterns",
        ".item() / .tolist() in the host code: each call synchronises the device",
        "keep values on the device and pass tensors to the kernel",
        "78",
    ),
    Rule(
        "device_print",
        WARNING,
        "device-print-env",
        "tl.device_print / print inside a kernel: needs TRITON_DEVICE_PRINT=1 on Ascend and a 16 KB buffer",
        "remove prints from kernels before measuring; debug on the interpreter",
        "40",
    ),
    Rule(
        "block_ptr_swapped_strides",
        WARNING,
        "block-ptr-order-for-transpose",
        "tl.make_block_ptr with strides whose first entry is 1 (a transpose written as swapped strides)",
        "keep the natural strides and express the transpose with order=(0, 1)",
        "26, 27",
    ),
    Rule(
        "indirect_access",
        WARNING,
        "gather-load-then-tl-gather",
        "a load or store whose offsets come from loaded data (a gather / scatter): becomes scalar GM accesses",
        "load the small source contiguously into UB and use tl.gather(src, idx, axis)",
        "23",
    ),
    Rule(
        "div_mod_offsets",
        WARNING,
        "div-mod-in-pointer-offsets",
        "tensor // or % in pointer offsets: only linearised when the block divides the axis evenly",
        "use a 2-D tile (rows[:, None] * stride + cols[None, :]) instead of div / mod on a flat index",
        "25",
    ),
    Rule(
        "fp16_reduction",
        WARNING,
        "fp32-accumulation-reductions",
        "tl.sum / tl.cumsum over fp16 or bf16 data without an fp32 upcast",
        "x.to(tl.float32) before the reduction",
        "78",
    ),
    Rule(
        "int_compare_in_where",
        WARNING,
        "int-compare-cast-fp32",
        "a condition of tl.where made by comparing integer tensors: int compares fall back to the scalar unit",
        "compare fp32 values (cast the integers with .to(tl.float32)) or fold the condition into a load mask",
        "30",
    ),
    Rule(
        "descriptor_mixing",
        WARNING,
        "tensor-descriptor-no-mixing",
        "tensor-descriptor APIs mixed with plain tl.load / tl.store in one kernel",
        "use one access style per kernel",
        "39",
    ),
    Rule(
        "scalar_div_rn",
        WARNING,
        "scalar-div-rn-lowering-crash",
        "tl.div_rn / precise division on scalar operands (crashes the front-end lowering on some versions)",
        "use a / b, or keep an operand a tensor",
        "66",
    ),
)

_DTYPES = {
    "float16": "fp16",
    "half": "fp16",
    "bfloat16": "bf16",
    "float32": "fp32",
    "float": "fp32",
    "float64": "fp64",
    "double": "fp64",
    "float8e4nv": "fp8",
    "float8e5": "fp8",
    "float8e4b15": "fp8",
    "float8e4b8": "fp8",
    "float8e5b16": "fp8",
    "int1": "int1",
    "bool": "int1",
    "int8": "int8",
    "int16": "int16",
    "int32": "int32",
    "int64": "int64",
    "uint8": "uint8",
    "uint16": "uint16",
    "uint32": "uint32",
    "uint64": "uint64",
}
_BYTES = {
    "fp16": 2,
    "bf16": 2,
    "fp32": 4,
    "fp64": 8,
    "fp8": 1,
    "int1": 1,
    "int8": 1,
    "int16": 2,
    "int32": 4,
    "int64": 8,
    "uint8": 1,
    "uint16": 2,
    "uint32": 4,
    "uint64": 8,
}
_TORCH_DTYPES = {
    "float16": "fp16",
    "half": "fp16",
    "bfloat16": "bf16",
    "float32": "fp32",
    "float": "fp32",
    "float64": "fp64",
    "double": "fp64",
    "int8": "int8",
    "int16": "int16",
    "int32": "int32",
    "int": "int32",
    "int64": "int64",
    "long": "int64",
    "uint8": "uint8",
    "uint16": "uint16",
    "uint32": "uint32",
    "uint64": "uint64",
    "bool": "int1",
    "float8_e4m3fn": "fp8",
    "float8_e5m2": "fp8",
}
_FLOATS = ("fp64", "fp32", "bf16", "fp16", "fp8")
_UNSUPPORTED_CODE_DTYPES = ("fp64", "uint8", "uint16", "uint32", "uint64")
_ELEMENTWISE_KEEP = frozenset(
    {
        "exp",
        "exp2",
        "log",
        "log2",
        "sqrt",
        "rsqrt",
        "sin",
        "cos",
        "abs",
        "sigmoid",
        "erf",
        "floor",
        "ceil",
        "fma",
        "maximum",
        "minimum",
        "clamp",
        "softmax",
        "umulhi",
        "fdiv",
        "div_rn",
        "sqrt_rn",
        "tanh",
        "pow",
        "cdiv",
        "multiple_of",
        "max_contiguous",
        "max_constancy",
        "log1p",
        "expm1",
        "neg",
        "fabs",
    }
)
_REDUCTIONS = frozenset({"sum", "max", "min", "argmax", "argmin", "reduce", "xor_sum", "prod"})
_SCANS = frozenset({"cumsum", "cumprod", "associative_scan"})
_ATOMICS = frozenset(
    {"atomic_add", "atomic_max", "atomic_min", "atomic_xchg", "atomic_cas", "atomic_and", "atomic_or", "atomic_xor"}
)
_DESCRIPTOR_CALLS = frozenset(
    {
        "make_tensor_descriptor",
        "_experimental_make_tensor_descriptor",
        "load_tensor_descriptor",
        "store_tensor_descriptor",
        "_experimental_descriptor_load",
        "_experimental_descriptor_store",
    }
)


# ----------------------------------------------------------------------------- abstract values


class _Unknown:
    def __repr__(self) -> str:
        return "?"


UNKNOWN = _Unknown()


@dataclass
class Val:
    """What the analysis knows about one value inside a kernel."""

    shape: tuple[int | None, ...] | None = None  # None / () = scalar; dims may be None (unknown)
    dtype: str | None = None  # element dtype ("fp32", "int64", ...); pointee dtype for pointers
    ptr: bool = False
    block_ptr: bool = False
    const: Any = UNKNOWN
    loaded: bool = False  # derived from data loaded from memory
    where: bool = False  # derived from tl.where
    divmod: bool = False  # derived from a tensor // or %
    from_dot: bool = False
    int_cmp: bool = False  # a comparison of integer tensors
    dtype_obj: str | None = None  # this value is a dtype object (tl.float16 -> "fp16")
    items: list[Val] | None = None  # tuples
    module: str | None = None  # a module / namespace (tl, tl.math)
    root: str | None = None  # for pointers: the kernel parameter they derive from

    @property
    def is_tensor(self) -> bool:
        return bool(self.shape)

    @property
    def numel(self) -> int | None:
        if not self.shape:
            return 1
        n = 1
        for d in self.shape:
            if d is None:
                return None
            n *= d
        return n

    @property
    def nbytes(self) -> int | None:
        n = self.numel
        if n is None or self.dtype is None or self.ptr:
            return None
        return n * _BYTES.get(self.dtype, 4)


def _const_val(value: Any) -> Val:
    if isinstance(value, bool):
        return Val(dtype="int1", const=value)
    if isinstance(value, int):
        return Val(dtype="int32" if -(2**31) <= value < 2**31 else "int64", const=value)
    if isinstance(value, float):
        return Val(dtype="fp32", const=value)
    if isinstance(value, (tuple, list)):
        return Val(items=[_const_val(v) for v in value], const=tuple(value))
    return Val(const=value)


def _broadcast(*shapes: tuple[int | None, ...] | None) -> tuple[int | None, ...] | None:
    present = [s for s in shapes if s]
    if not present:
        return None
    rank = max(len(s) for s in present)
    out: list[int | None] = []
    for i in range(rank):
        dims = [s[len(s) - rank + i] for s in present if len(s) - rank + i >= 0]
        known = [d for d in dims if d is not None and d != 1]
        if known:
            out.append(max(known))
        elif any(d is None for d in dims):
            out.append(None)
        else:
            out.append(1)
    return tuple(out)


def _promote(a: Val, b: Val) -> str | None:
    """Result dtype of an arithmetic op (Triton-like: Python literals are weakly typed)."""
    da = None if (a.const is not UNKNOWN and not a.is_tensor and not a.ptr and a.dtype != "int64") else a.dtype
    db = None if (b.const is not UNKNOWN and not b.is_tensor and not b.ptr and b.dtype != "int64") else b.dtype
    if da is None:
        return db or a.dtype
    if db is None:
        return da
    for f in _FLOATS:
        if f in (da, db):
            return f
    if "int64" in (da, db) or "uint64" in (da, db):
        return "int64"
    return da


# ----------------------------------------------------------------------------- module facts


@dataclass
class _Kernel:
    name: str
    node: ast.FunctionDef
    params: list[str]
    constexpr_params: set[str]
    defaults: dict[str, Any]
    autotune_configs: list[dict[str, Any]] = field(default_factory=list)
    autotune_warps: bool = False
    is_launched: bool = False


@dataclass
class _Module:
    tree: ast.Module
    aliases: dict[str, str]  # local name -> "tl" / "triton" / "tl.math"
    constants: dict[str, Any]
    kernels: dict[str, _Kernel]
    call_sites: dict[str, list[ast.Call]]
    functions: dict[str, ast.FunctionDef]


def _dotted(node: ast.AST) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _normalise(name: str | None, aliases: dict[str, str]) -> str | None:
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


def _literal(node: ast.AST | None, constants: dict[str, Any] | None = None) -> Any:
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
    name = _normalise(_dotted(target), aliases) or ""
    return name.split(".")[-1] in ("jit",) and (name.startswith("triton") or name == "jit" or name.startswith("tl"))


def _parse_module(source: str) -> _Module | None:
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
    kernels: dict[str, _Kernel] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = node.value
            if isinstance(value, ast.Call) and (_normalise(_dotted(value.func), aliases) or "").endswith("constexpr"):
                value = value.args[0] if value.args else value
            lit = _literal(value)
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
            name = _dotted(node.func.value)
            if name in kernels:
                call_sites.setdefault(name, []).append(node)
                kernels[name].is_launched = True
    return _Module(tree, aliases, constants, kernels, call_sites, functions)


def _make_kernel(node: ast.FunctionDef, aliases: dict[str, str], constants: dict[str, Any]) -> _Kernel:
    args = node.args.args + node.args.kwonlyargs
    params = [a.arg for a in args]
    constexpr = set()
    for a in args:
        ann = a.annotation
        if ann is not None:
            text = _dotted(ann) or (ann.value if isinstance(ann, ast.Constant) else "") or ""
            if str(text).split(".")[-1] == "constexpr":
                constexpr.add(a.arg)
    defaults: dict[str, Any] = {}
    positional = node.args.args
    for a, d in zip(positional[len(positional) - len(node.args.defaults) :], node.args.defaults, strict=False):
        defaults[a.arg] = _literal(d, constants)
    for a, d in zip(node.args.kwonlyargs, node.args.kw_defaults, strict=False):
        if d is not None:
            defaults[a.arg] = _literal(d, constants)
    kernel = _Kernel(node.name, node, params, constexpr, defaults)
    for deco in node.decorator_list:
        if not isinstance(deco, ast.Call):
            continue
        name = _normalise(_dotted(deco.func), aliases) or ""
        if not name.endswith("autotune"):
            continue
        for kw in deco.keywords:
            if kw.arg == "configs" and isinstance(kw.value, (ast.List, ast.Tuple)):
                for cfg in kw.value.elts:
                    if not isinstance(cfg, ast.Call):
                        continue
                    values = _literal(cfg.args[0], constants) if cfg.args else UNKNOWN
                    if isinstance(values, dict):
                        kernel.autotune_configs.append(values)
                    for ckw in cfg.keywords:
                        if ckw.arg in ("num_warps", "num_stages"):
                            kernel.autotune_warps = True
                        if ckw.arg == "kwargs":
                            lit = _literal(ckw.value, constants)
                            if isinstance(lit, dict):
                                kernel.autotune_configs.append(lit)
    return kernel


# ----------------------------------------------------------------------------- findings


@dataclass
class _Findings:
    items: dict[tuple[str, str, int], dict[str, Any]] = field(default_factory=dict)

    def add(
        self,
        rule: str,
        kernel: str,
        line: int,
        value: Any,
        limit: Any,
        detail: str,
        severity: str | None = None,
    ) -> None:
        spec = RULES[rule]
        key = (rule, kernel, line)
        finding = {
            "rule": rule,
            "severity": severity or spec.severity,
            "value": value,
            "limit": limit,
            # self-contained: the evaluator shows the message alone in the agent's feedback
            "message": f"{kernel}" + (f" line {line}" if line else "") + f": {detail}. Fix: {spec.fix}",
            "fix": spec.fix,
            "kb_id": spec.kb_id,
            "kernel": kernel,
            "line": line,
        }
        old = self.items.get(key)
        if (
            old is None
            or (_sortable(value) > _sortable(old["value"]))
            or (finding["severity"] == ERROR and old["severity"] != ERROR)
        ):
            self.items[key] = finding

    def result(self) -> list[dict[str, Any]]:
        order = {ERROR: 0, WARNING: 1}
        return sorted(
            self.items.values(), key=lambda f: (order.get(f["severity"], 2), f["kernel"], f["line"], f["rule"])
        )


def _sortable(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


# ----------------------------------------------------------------------------- kernel analysis


@dataclass
class _Context:
    constexprs: dict[str, Any]
    pointer_dtypes: dict[str, str]
    label: str = ""
    #: pointer parameter -> (shape, dtype) of the tensor passed for it
    pointer_tensors: dict[str, tuple[list[int], str]] = field(default_factory=dict)
    uses_dot: bool = False
    #: parameters used as pointers (from the kernel's loads / stores), with or without a dtype
    pointers: tuple[str, ...] = ()


class _KernelAnalyzer:
    """Walks one kernel with one set of constexpr values and pointer dtypes."""

    def __init__(self, module: _Module, kernel: _Kernel, ctx: _Context, chip: ChipProfile, out: _Findings) -> None:
        self.m = module
        self.k = kernel
        self.ctx = ctx
        self.chip = chip
        self.out = out
        self.env: dict[str, Val] = {}
        self.load_tiles: dict[int, tuple[int, str, int]] = {}  # line -> (bytes, var name or "", region)
        self.named_tiles: dict[str, int] = {}
        # liveness approximation: a region is the top level or one loop body; a tile is live in the
        # regions where it is assigned or read
        self.region = 0
        self._regions = 0
        self.region_names: dict[int, set[str]] = {0: set()}
        self.dot_vars: set[str] = set()  # names bound to tl.dot results (accumulators live in L0C)
        self.load_vars: dict[str, int] = {}  # variable assigned from a tl.load -> bytes loaded
        self.dot_operand_vars: set[str] = set()
        self.uses_plain_memory = False
        self.uses_descriptors = False
        self.tiled_2d: dict[str, int] = {}  # pointer parameter -> first line of a 2-D tile access
        self._assign_target: str | None = None
        self._loop_depth = 0
        self._branch_depth = 0

    # --- helpers ------------------------------------------------------------------------------
    def emit(self, rule: str, node: ast.AST, value: Any, limit: Any, detail: str, severity: str | None = None) -> None:
        self.out.add(rule, self.k.name, getattr(node, "lineno", 0), value, limit, detail, severity)

    def name_of(self, func: ast.expr) -> str | None:
        return _normalise(_dotted(func), self.m.aliases)

    # --- entry --------------------------------------------------------------------------------
    def run(self) -> None:
        for p in self.k.params:
            self.env[p] = self._param_val(p)
        body = self.k.node.body
        for i, stmt in enumerate(body):
            last = i == len(body) - 1
            if isinstance(stmt, ast.Return) and last:
                if stmt.value is not None:
                    self.expr(stmt.value)
                continue
            self.stmt(stmt)
        self._finish()

    def _param_val(self, p: str) -> Val:
        if p in self.k.constexpr_params:
            value = self.ctx.constexprs.get(p, self.k.defaults.get(p, UNKNOWN))
            val = _const_val(value) if value is not UNKNOWN else Val()
            if isinstance(value, str) and value in _DTYPES:
                val.dtype_obj = _DTYPES[value]
            return val
        if p in self.ctx.pointer_dtypes or p in self.ctx.pointers:
            return Val(ptr=True, dtype=self.ctx.pointer_dtypes.get(p), root=p)
        return Val(dtype=None)

    # --- statements ---------------------------------------------------------------------------
    def block(self, stmts: Sequence[ast.stmt]) -> None:
        for s in stmts:
            self.stmt(s)

    def stmt(self, node: ast.stmt) -> None:
        if isinstance(node, ast.Assign):
            target = node.targets[0] if len(node.targets) == 1 else None
            self._assign_target = target.id if isinstance(target, ast.Name) else None
            value = self.expr(node.value)
            self._assign_target = None
            for t in node.targets:
                self.bind(t, value, node)
        elif isinstance(node, ast.AnnAssign):
            if node.value is not None:
                self.bind(node.target, self.expr(node.value), node)
        elif isinstance(node, ast.AugAssign):
            current = self.expr(node.target)
            value = self.binop(node.op, current, self.expr(node.value), node)
            self.bind(node.target, value, node)
        elif isinstance(node, ast.For):
            self._for(node)
        elif isinstance(node, ast.While):
            self.emit("while_loop", node, None, None, "while loop in a kernel")
            self.expr(node.test)
            self._loop_depth += 1
            self.block(node.body)
            self._loop_depth -= 1
            self.block(node.orelse)
        elif isinstance(node, ast.If):
            self.expr(node.test)
            self._branch_depth += 1
            self.block(node.body)
            self.block(node.orelse)
            self._branch_depth -= 1
        elif isinstance(node, (ast.Break, ast.Continue)):
            word = "break" if isinstance(node, ast.Break) else "continue"
            self.emit("break_continue", node, word, None, f"`{word}` in a kernel")
        elif isinstance(node, ast.Return):
            self.emit("early_return", node, None, None, "return inside a branch or loop (early exit)")
            if node.value is not None:
                self.expr(node.value)
        elif isinstance(node, ast.Expr):
            self.expr(node.value)
        elif isinstance(node, ast.With):
            self.block(node.body)
        elif isinstance(node, ast.Assert):
            self.expr(node.test)

    def _for(self, node: ast.For) -> None:
        it = node.iter
        if isinstance(it, ast.Call):
            for a in it.args:
                self.expr(a)
        var = Val(dtype="int32")
        self._loop_depth += 1
        outer = self.region
        self._regions += 1
        self.region = self._regions
        self.region_names[self.region] = set()
        passes = 2 if self._loop_depth <= 3 else 1  # second pass: loop-carried shapes / flags (bounded)
        for _ in range(passes):
            self.bind(node.target, var, node)
            self.block(node.body)
        self.region = outer
        self._loop_depth -= 1
        self.block(node.orelse)

    def bind(self, target: ast.expr, value: Val, node: ast.AST) -> None:
        if isinstance(target, ast.Name):
            self.env[target.id] = value
            if value.from_dot:
                self.dot_vars.add(target.id)
            self._track_tile(target.id, value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            items = value.items or []
            for i, t in enumerate(target.elts):
                self.bind(t, items[i] if i < len(items) else Val(), node)

    def _track_tile(self, name: str, value: Val) -> None:
        """Vector tiles that occupy UB: data tensors (floats, loaded data), not pointers, masks,
        pure index tensors or tl.dot results (those live in L0C)."""
        if not value.is_tensor or value.ptr or value.from_dot or value.dtype == "int1":
            return
        if not (value.loaded or (value.dtype in _FLOATS)):
            return
        size = value.nbytes
        if size is not None:
            self.named_tiles[name] = max(self.named_tiles.get(name, 0), size)
            self.region_names[self.region].add(name)

    # --- expressions --------------------------------------------------------------------------
    def expr(self, node: ast.expr | None) -> Val:
        if node is None:
            return Val()
        method = getattr(self, f"e_{type(node).__name__}", None)
        if method is None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    self.expr(child)
            return Val()
        return method(node)

    def e_Constant(self, node: ast.Constant) -> Val:  # noqa: N802
        return _const_val(node.value)

    def e_Name(self, node: ast.Name) -> Val:  # noqa: N802
        if node.id in self.env:
            if node.id in self.named_tiles:
                self.region_names[self.region].add(node.id)
            return self.env[node.id]
        if node.id in self.m.constants:
            return _const_val(self.m.constants[node.id])
        target = self.m.aliases.get(node.id)
        if target is not None:
            return Val(module=_normalise(node.id, self.m.aliases))
        return Val()

    def e_Tuple(self, node: ast.Tuple) -> Val:  # noqa: N802
        items = [self.expr(e) for e in node.elts]
        consts = tuple(i.const for i in items)
        return Val(items=items, const=consts if all(c is not UNKNOWN for c in consts) else UNKNOWN)

    e_List = e_Tuple  # noqa: N815

    def e_Attribute(self, node: ast.Attribute) -> Val:  # noqa: N802
        name = self.name_of(node)
        if name and name.startswith("tl."):
            leaf = name.split(".")[-1]
            if leaf in _DTYPES:
                dt = _DTYPES[leaf]
                if dt in _UNSUPPORTED_CODE_DTYPES:
                    self.emit("unsupported_dtype", node, leaf, None, f"uses tl.{leaf}")
                return Val(dtype_obj=dt)
            return Val(module=name)
        base = self.expr(node.value)
        if node.attr == "dtype":
            return Val(dtype_obj=base.dtype) if not base.ptr else Val(dtype_obj="ptr", dtype=base.dtype)
        if node.attr == "element_ty":
            return Val(dtype_obj=base.dtype)
        if node.attr == "T":
            return Val(shape=tuple(reversed(base.shape)) if base.shape else None, dtype=base.dtype)
        if node.attr == "shape" and base.shape:
            return Val(items=[_const_val(d) if d is not None else Val() for d in base.shape])
        return Val()

    def e_Subscript(self, node: ast.Subscript) -> Val:  # noqa: N802
        base = self.expr(node.value)
        index = node.slice
        elts = index.elts if isinstance(index, ast.Tuple) else [index]
        if base.items is not None and not base.is_tensor:
            idx = _literal(index)
            if isinstance(idx, int) and -len(base.items) <= idx < len(base.items):
                return base.items[idx]
            return Val()
        if not base.is_tensor:
            for e in elts:
                self.expr(e)
            return Val()
        bad = []
        new_shape: list[int | None] = []
        dims = list(base.shape or ())
        pos = 0
        for e in elts:
            if isinstance(e, ast.Constant) and e.value is None:
                new_shape.append(1)
            elif isinstance(e, ast.Slice) and e.lower is None and e.upper is None and e.step is None:
                new_shape.append(dims[pos] if pos < len(dims) else None)
                pos += 1
            elif isinstance(e, ast.Constant) and e.value is Ellipsis:
                rest = len(dims) - pos - sum(1 for x in elts if not (isinstance(x, ast.Constant) and x.value is None))
                new_shape.extend(dims[pos : pos + max(0, rest + 1)])
                pos += max(0, rest + 1)
            else:
                bad.append(ast.unparse(e))
                pos += 1
        if bad:
            self.emit(
                "tensor_slicing",
                node,
                ast.unparse(node)[:60],
                None,
                f"indexes a tensor with Python subscripts ({ast.unparse(node)[:60]})",
            )
            return Val(dtype=base.dtype, ptr=base.ptr, loaded=base.loaded)
        new_shape.extend(dims[pos:])
        return _replace(base, shape=tuple(new_shape))

    def e_UnaryOp(self, node: ast.UnaryOp) -> Val:  # noqa: N802
        v = self.expr(node.operand)
        if v.const is not UNKNOWN:
            try:
                return _const_val(_UNARY[type(node.op)](v.const))
            except Exception:  # noqa: BLE001 - unknown operator or operand type: not a constant
                return v
        return _replace(v, const=UNKNOWN)

    def e_BinOp(self, node: ast.BinOp) -> Val:  # noqa: N802
        return self.binop(node.op, self.expr(node.left), self.expr(node.right), node)

    def binop(self, op: ast.operator, a: Val, b: Val, node: ast.AST) -> Val:
        if a.const is not UNKNOWN and b.const is not UNKNOWN and not isinstance(a.const, tuple):
            try:
                value = _fold(op, a.const, b.const)
            except Exception:  # noqa: BLE001
                value = UNKNOWN
            if value is not UNKNOWN:
                return _const_val(value)
        shape = _broadcast(a.shape, b.shape)
        is_tensor = bool(shape)
        if a.ptr or b.ptr:
            ptr, off = (a, b) if a.ptr else (b, a)
            if isinstance(op, (ast.Add, ast.Sub)):
                self._pointer_offset(off, node)
            return Val(
                shape=shape,
                dtype=ptr.dtype,
                ptr=True,
                loaded=a.loaded or b.loaded,
                where=a.where or b.where,
                divmod=a.divmod or b.divmod,
                root=ptr.root,
            )
        dtype = _promote(a, b)
        if isinstance(op, ast.Div) and dtype not in _FLOATS:
            dtype = "fp32"
        result = Val(
            shape=shape,
            dtype=dtype,
            loaded=a.loaded or b.loaded,
            where=a.where or b.where,
            divmod=a.divmod or b.divmod or (is_tensor and isinstance(op, (ast.FloorDiv, ast.Mod))),
            from_dot=False,
            int_cmp=(a.int_cmp or b.int_cmp) and isinstance(op, (ast.BitAnd, ast.BitOr, ast.BitXor)),
        )
        if isinstance(op, (ast.BitAnd, ast.BitOr)) and a.dtype == "int1" and b.dtype == "int1":
            result.dtype = "int1"
        if is_tensor and dtype == "int64" and isinstance(op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod)):
            self.emit(
                "int64_index",
                node,
                "int64",
                "int32",
                f"int64 arithmetic on a tensor ({_short(node)})",
            )
        self._check_tile(result, node)
        return result

    def _pointer_offset(self, off: Val, node: ast.AST) -> None:
        if off.where:
            self.emit("where_pointer", node, None, None, f"pointer offsets computed with tl.where ({_short(node)})")
        if off.loaded and off.is_tensor:
            self.emit(
                "indirect_access",
                node,
                None,
                None,
                f"pointer offsets come from loaded data, a gather / scatter ({_short(node)})",
            )
        if off.divmod:
            self.emit("div_mod_offsets", node, None, None, f"tensor // or % in pointer offsets ({_short(node)})")

    def e_Compare(self, node: ast.Compare) -> Val:  # noqa: N802
        vals = [self.expr(node.left)] + [self.expr(c) for c in node.comparators]
        shape = _broadcast(*(v.shape for v in vals))
        ints = all((v.dtype or "int32").startswith(("int", "uint")) and not v.ptr for v in vals)
        any_tensor = any(v.is_tensor for v in vals)
        consts = [v.const for v in vals]
        if all(c is not UNKNOWN for c in consts) and len(node.ops) == 1 and type(node.ops[0]) in _COMPARE:
            with contextlib.suppress(Exception):
                return _const_val(bool(_COMPARE[type(node.ops[0])](consts[0], consts[1])))
        return Val(
            shape=shape,
            dtype="int1",
            loaded=any(v.loaded for v in vals),
            int_cmp=bool(ints and any_tensor),
        )

    def e_BoolOp(self, node: ast.BoolOp) -> Val:  # noqa: N802
        vals = [self.expr(v) for v in node.values]
        return Val(shape=_broadcast(*(v.shape for v in vals)), dtype="int1")

    def e_IfExp(self, node: ast.IfExp) -> Val:  # noqa: N802
        test = self.expr(node.test)
        a, b = self.expr(node.body), self.expr(node.orelse)
        if test.const is not UNKNOWN:
            return a if test.const else b
        return a if a.is_tensor or not b.is_tensor else b

    def e_Call(self, node: ast.Call) -> Val:  # noqa: N802
        func = node.func
        name = self.name_of(func)
        if name and name.startswith("tl."):
            return self.tl_call(name[3:], node)
        if isinstance(func, ast.Name) and func.id == "print":
            self.emit("device_print", node, None, None, "print() inside a kernel")
            return Val()
        if isinstance(func, ast.Name) and func.id in ("min", "max", "abs", "int", "float", "len", "range"):
            vals = [self.expr(a) for a in node.args]
            if all(v.const is not UNKNOWN for v in vals):
                try:
                    return _const_val(
                        {"min": min, "max": max, "abs": abs, "int": int, "float": float}[func.id](
                            *[v.const for v in vals]
                        )
                    )
                except Exception:  # noqa: BLE001
                    return Val()
            return Val()
        if isinstance(func, ast.Attribute):
            recv_name = _normalise(_dotted(func.value), self.m.aliases) or ""
            if not recv_name.startswith(("tl", "triton")):
                base = self.expr(func.value)
                return self.method_call(base, func.attr, node)
        # jit helpers and anything else: evaluate arguments, result unknown
        for a in node.args:
            self.expr(a)
        for kw in node.keywords:
            self.expr(kw.value)
        return Val()

    def method_call(self, base: Val, attr: str, node: ast.Call) -> Val:
        args = [self.expr(a) for a in node.args]
        kwargs = {kw.arg: self.expr(kw.value) for kw in node.keywords if kw.arg}
        if attr == "to":
            target = args[0] if args else kwargs.get("dtype", Val())
            return self._cast(base, target, node)
        if attr in _REDUCTIONS:
            return self._reduce(attr, base, args[0] if args else kwargs.get("axis", Val(const=None)), node)
        if attr in ("item", "tolist"):
            self.emit("tensor_slicing", node, attr, None, f".{attr}() on a tensor inside a kernel")
        return Val(shape=base.shape, dtype=base.dtype) if base.is_tensor else Val()

    # --- tl.* ---------------------------------------------------------------------------------
    def tl_call(self, fn: str, node: ast.Call) -> Val:
        leaf = fn.split(".")[-1]
        if leaf in _DTYPES and fn.count(".") == 0:
            self.emit(
                "dtype_call_cast", node, ast.unparse(node)[:40], None, f"casts by calling a dtype ({_short(node)})"
            )
            for a in node.args:
                self.expr(a)
            return Val(dtype=_DTYPES[leaf])
        kw_nodes = {kw.arg: kw.value for kw in node.keywords if kw.arg}

        def arg(i: int, key: str) -> ast.expr | None:
            if i < len(node.args):
                return node.args[i]
            return kw_nodes.get(key)

        if leaf == "constexpr":
            self.emit("constexpr_in_body", node, None, None, "tl.constexpr(...) inside the kernel body")
            return self.expr(node.args[0]) if node.args else Val()
        if leaf in ("program_id", "num_programs"):
            return Val(dtype="int32")
        if leaf == "arange":
            start, end = self.expr(arg(0, "start")), self.expr(arg(1, "end"))
            if isinstance(start.const, int) and isinstance(end.const, int):
                length = end.const - start.const
                if start.const < 0 or length > MAX_ARANGE:
                    self.emit(
                        "arange_too_long",
                        node,
                        length,
                        MAX_ARANGE,
                        f"tl.arange({start.const}, {end.const}) has length {length:,}"
                        + (" and a negative start" if start.const < 0 else ""),
                    )
                v = Val(shape=(length,), dtype="int32")
                self._check_tile(v, node)
                return v
            return Val(shape=(None,), dtype="int32")
        if leaf in ("zeros", "full", "zeros_like", "full_like", "empty"):
            return self._alloc(leaf, node, arg, kw_nodes)
        if leaf == "load":
            return self._load(node, arg, kw_nodes)
        if leaf == "store":
            self.uses_plain_memory = True
            ptr = self.expr(arg(0, "pointer"))
            self._note_access(ptr, node)
            self.expr(arg(1, "value"))
            self.expr(arg(2, "mask"))
            return Val()
        if leaf in _ATOMICS:
            return self._atomic(leaf, node, arg, kw_nodes)
        if leaf == "dot":
            return self._dot(node, arg, kw_nodes)
        if leaf == "dot_scaled":
            self.emit("dot_scaled", node, None, None, "uses tl.dot_scaled")
            for a in node.args:
                self.expr(a)
            return Val(from_dot=True)
        if leaf in _REDUCTIONS:
            x = self.expr(arg(0, "input"))
            axis = self.expr(arg(1, "axis"))
            for k, v in kw_nodes.items():
                if k not in ("input", "axis"):
                    self.expr(v)
            return self._reduce(leaf, x, axis, node, keep_dims=_literal(kw_nodes.get("keep_dims")) is True)
        if leaf in _SCANS:
            x = self.expr(arg(0, "input"))
            if leaf == "cumsum" and x.dtype in ("fp16", "bf16"):
                self.emit("fp16_reduction", node, x.dtype, "fp32", f"tl.{leaf} over {x.dtype} data")
            return _replace(x, const=UNKNOWN, from_dot=False)
        if leaf == "sort":
            x = self.expr(arg(0, "x"))
            if x.dtype in ("int32", "int64", "uint8", "fp64", "int1"):
                self.emit("sort_dtype", node, x.dtype, None, f"tl.sort on {x.dtype} data")
            return _replace(x, const=UNKNOWN)
        if leaf == "where":
            cond, a, b = self.expr(arg(0, "condition")), self.expr(arg(1, "x")), self.expr(arg(2, "y"))
            if cond.int_cmp:
                self.emit(
                    "int_compare_in_where",
                    node,
                    None,
                    None,
                    f"tl.where condition compares integer tensors ({_short(node.args[0]) if node.args else ''})",
                )
            if a.ptr or b.ptr:
                self.emit("where_pointer", node, None, None, f"tl.where selects between pointers ({_short(node)})")
            shape = _broadcast(cond.shape, a.shape, b.shape)
            v = Val(
                shape=shape,
                dtype=_promote(a, b),
                ptr=a.ptr or b.ptr,
                where=True,
                loaded=a.loaded or b.loaded or cond.loaded,
            )
            self._check_tile(v, node)
            return v
        if leaf == "cast":
            x = self.expr(arg(0, "input"))
            return self._cast(x, self.expr(arg(1, "dtype")), node)
        if leaf in ("reshape", "view"):
            x = self.expr(arg(0, "input"))
            shape_val = self.expr(arg(1, "shape")) if len(node.args) > 1 or "shape" in kw_nodes else None
            if shape_val is not None and shape_val.items is not None:
                dims = tuple(i.const if isinstance(i.const, int) else None for i in shape_val.items)
            elif len(node.args) > 2:
                dims = tuple(self.expr(a).const if isinstance(self.expr(a).const, int) else None for a in node.args[1:])
            else:
                dims = None
            return _replace(x, shape=dims if dims else x.shape, const=UNKNOWN)
        if leaf in ("trans", "permute"):
            x = self.expr(arg(0, "input"))
            return _replace(x, shape=tuple(reversed(x.shape)) if x.shape else x.shape)
        if leaf in ("expand_dims",):
            x = self.expr(arg(0, "input"))
            axis = self.expr(arg(1, "axis")).const
            if x.shape is not None and isinstance(axis, int):
                dims = list(x.shape)
                dims.insert(axis if axis >= 0 else len(dims) + axis + 1, 1)
                return _replace(x, shape=tuple(dims))
            return x
        if leaf in ("broadcast_to",):
            x = self.expr(arg(0, "input"))
            shape_val = self.expr(node.args[1]) if len(node.args) > 1 else Val()
            if shape_val.items is not None:
                return _replace(x, shape=tuple(i.const if isinstance(i.const, int) else None for i in shape_val.items))
            return x
        if leaf == "make_block_ptr":
            return self._block_ptr(node, kw_nodes)
        if leaf == "advance":
            return self.expr(arg(0, "base"))
        if leaf in ("device_print",):
            self.emit("device_print", node, None, None, "tl.device_print in a kernel")
            return Val()
        if leaf in ("static_print", "static_assert", "device_assert", "debug_barrier"):
            return Val()
        if leaf in _DESCRIPTOR_CALLS:
            self.uses_descriptors = True
            for a in node.args:
                self.expr(a)
            return Val()
        if leaf in ("div_rn", "fdiv"):
            vals = [self.expr(a) for a in node.args]
            rn = leaf == "div_rn" or _literal(kw_nodes.get("ieee_rounding")) is True
            if rn and vals and not any(v.is_tensor for v in vals):
                self.emit("scalar_div_rn", node, None, None, f"tl.{fn} on scalar operands")
            return Val(shape=_broadcast(*(v.shape for v in vals)), dtype="fp32")
        # generic elementwise / unknown tl function: broadcast the tensor arguments
        vals = [self.expr(a) for a in node.args]
        for v in kw_nodes.values():
            self.expr(v)
        if leaf == "cdiv" and len(vals) == 2 and all(isinstance(v.const, int) for v in vals) and vals[1].const:
            return _const_val(-(-vals[0].const // vals[1].const))
        if leaf in ("minimum", "maximum") and len(vals) == 2 and all(isinstance(v.const, (int, float)) for v in vals):
            pair = (vals[0].const, vals[1].const)
            return _const_val(min(pair) if leaf == "minimum" else max(pair))
        tensors = [v for v in vals if v.is_tensor or v.ptr]
        if not tensors and not vals:
            return Val()
        base = tensors[0] if tensors else vals[0]
        shape = _broadcast(*(v.shape for v in vals))
        dtype = base.dtype
        if leaf in ("multiple_of", "max_contiguous", "max_constancy"):
            return base
        for v in vals[1:]:
            dtype = _promote(Val(dtype=dtype, shape=shape), v) if v.is_tensor else dtype
        if leaf in ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "sigmoid", "erf", "tanh") and (
            dtype not in _FLOATS
        ):
            dtype = "fp32"
        out = Val(
            shape=shape,
            dtype=dtype,
            ptr=base.ptr,
            loaded=any(v.loaded for v in vals),
            where=any(v.where for v in vals),
            divmod=any(v.divmod for v in vals),
        )
        self._check_tile(out, node)
        return out

    def _cast(self, x: Val, target: Val, node: ast.AST) -> Val:
        dt = target.dtype_obj
        if dt == "ptr":
            dt = target.dtype
        if dt is None:
            return _replace(x, const=UNKNOWN, from_dot=False)
        return _replace(x, dtype=dt, const=UNKNOWN, from_dot=False, int_cmp=False)

    def _reduce(self, leaf: str, x: Val, axis: Val, node: ast.AST, keep_dims: bool = False) -> Val:
        if leaf == "sum" and x.dtype in ("fp16", "bf16"):
            self.emit("fp16_reduction", node, x.dtype, "fp32", f"tl.sum over {x.dtype} data")
        dtype = "int32" if leaf in ("argmax", "argmin") else x.dtype
        if not x.shape:
            return Val(dtype=dtype, loaded=x.loaded)
        ax = axis.const
        if ax is None or ax is UNKNOWN:
            return Val(dtype=dtype, loaded=x.loaded)
        if isinstance(ax, int):
            dims = list(x.shape)
            if -len(dims) <= ax < len(dims):
                if keep_dims:
                    dims[ax] = 1
                else:
                    dims.pop(ax)
            return Val(shape=tuple(dims) or None, dtype=dtype, loaded=x.loaded)
        return Val(dtype=dtype, loaded=x.loaded)

    def _alloc(self, leaf: str, node: ast.Call, arg: Any, kw: dict[str, ast.expr]) -> Val:
        if leaf.endswith("_like"):
            x = self.expr(arg(0, "input"))
            dt = self.expr(kw["dtype"]).dtype_obj if "dtype" in kw else x.dtype
            v = Val(shape=x.shape, dtype=dt)
        else:
            shape_val = self.expr(arg(0, "shape"))
            dtype_node = arg(2, "dtype") if leaf == "full" else arg(1, "dtype")
            if leaf == "full":
                self.expr(arg(1, "value"))
            dt = self.expr(dtype_node).dtype_obj if dtype_node is not None else None
            if shape_val.items is not None:
                dims = tuple(i.const if isinstance(i.const, int) else None for i in shape_val.items)
            elif isinstance(shape_val.const, int):
                dims = (shape_val.const,)
            else:
                dims = (None,)
            v = Val(shape=dims, dtype=dt)
        self._check_tile(v, node)
        return v

    def _load(self, node: ast.Call, arg: Any, kw: dict[str, ast.expr]) -> Val:
        ptr = self.expr(arg(0, "pointer"))
        self._note_access(ptr, node)
        self.expr(arg(1, "mask"))
        self.expr(arg(2, "other"))
        if ptr.block_ptr:
            shape = ptr.shape
        else:
            self.uses_plain_memory = True
            shape = ptr.shape
        v = Val(shape=shape, dtype=ptr.dtype, loaded=True)
        size = v.nbytes
        if v.is_tensor and size is not None:
            line = getattr(node, "lineno", 0)
            old = self.load_tiles.get(line, (0, "", self.region))
            self.load_tiles[line] = (max(old[0], size), self._assign_target or old[1], self.region)
            if self._assign_target:
                self.load_vars[self._assign_target] = max(self.load_vars.get(self._assign_target, 0), size)
        self._check_tile(v, node)
        return v

    def _atomic(self, leaf: str, node: ast.Call, arg: Any, kw: dict[str, ast.expr]) -> Val:
        ptr = self.expr(arg(0, "pointer"))
        for a in node.args[1:]:
            self.expr(a)
        dt = ptr.dtype
        bad = None
        if leaf == "atomic_add" and dt in ("int64", "fp64", "uint64"):
            bad = f"{leaf} on {dt}"
        elif leaf in ("atomic_max", "atomic_min") and dt in ("int64", "uint64"):
            bad = f"{leaf} on {dt}"
        sem = _literal(kw.get("sem"))
        scope = _literal(kw.get("scope"))
        if isinstance(sem, str) and sem != "acq_rel":
            bad = f"{leaf} with sem={sem!r}"
        if isinstance(scope, str) and scope != "gpu":
            bad = f"{leaf} with scope={scope!r}"
        if bad:
            self.emit("atomic_unsupported", node, bad, None, bad)
        return Val(shape=ptr.shape, dtype=dt)

    def _dot(self, node: ast.Call, arg: Any, kw: dict[str, ast.expr]) -> Val:
        a_node, b_node = arg(0, "input"), arg(1, "other")
        a, b = self.expr(a_node), self.expr(b_node)
        for n in (a_node, b_node):
            if isinstance(n, ast.Name):
                self.dot_operand_vars.add(n.id)
        acc_node = arg(2, "acc")
        acc = self.expr(acc_node) if acc_node is not None else None
        out_dtype = self.expr(kw["out_dtype"]).dtype_obj if "out_dtype" in kw else None
        if acc is not None and acc.dtype in ("fp16", "bf16"):
            self.emit("dot_fp16_accumulator", node, acc.dtype, "fp32", f"tl.dot accumulates into a {acc.dtype} tile")
        if out_dtype in ("fp16", "bf16"):
            self.emit("dot_fp16_accumulator", node, out_dtype, "fp32", f"tl.dot with out_dtype={out_dtype}")
        if "max_num_imprecise_acc" in kw and _literal(kw["max_num_imprecise_acc"]) not in (None, 0):
            self.emit("dot_options", node, "max_num_imprecise_acc", None, "tl.dot with max_num_imprecise_acc")
        prec = _literal(kw.get("input_precision"))
        if isinstance(prec, str) and prec not in ("ieee", "hf32"):
            self.emit("dot_options", node, prec, "ieee|hf32", f"tl.dot with input_precision={prec!r}")
        if _literal(kw.get("allow_tf32")) is True:
            self.emit("dot_options", node, "allow_tf32", "ieee|hf32", "tl.dot with allow_tf32=True")
        m = a.shape[-2] if a.shape and len(a.shape) >= 2 else None
        k = a.shape[-1] if a.shape else None
        n = b.shape[-1] if b.shape and len(b.shape) >= 2 else None
        dims = {"M": m, "N": n, "K": k}
        bad = {d: v for d, v in dims.items() if isinstance(v, int) and v % 16}
        if bad:
            self.emit(
                "dot_block_not_multiple_of_16",
                node,
                ", ".join(f"{d}={v}" for d, v in bad.items()),
                16,
                "tl.dot tile "
                + " x ".join(f"{d}={v if v is not None else '?'}" for d, v in dims.items())
                + " has dimensions that are not multiples of 16",
            )
        if isinstance(m, int) and isinstance(k, int) and isinstance(n, int):
            sa, sb = _BYTES.get(a.dtype or "fp16", 2), _BYTES.get(b.dtype or "fp16", 2)
            checks = [
                ("A tile", m * k * sa, self.chip.l0a_bytes),
                ("B tile", k * n * sb, self.chip.l0b_bytes),
                ("accumulator", m * n * 4, self.chip.l0c_bytes),
            ]
            for what, size, limit in checks:
                if limit and size > limit:
                    self.emit(
                        "l0_overflow",
                        node,
                        size,
                        limit,
                        f"tl.dot {what} of {size:,} B (M={m}, N={n}, K={k}) exceeds {limit:,} B",
                    )
        if a.dtype == "int8":
            dtype = "int32"
        else:
            dtype = out_dtype or (acc.dtype if acc is not None and acc.dtype else "fp32")
        shape = (*a.shape[:-1], n) if a.shape and len(a.shape) >= 2 else None
        return Val(shape=shape, dtype=dtype, from_dot=True)

    def _block_ptr(self, node: ast.Call, kw: dict[str, ast.expr]) -> Val:
        names = ["base", "shape", "strides", "offsets", "block_shape", "order"]
        vals: dict[str, ast.expr] = dict(zip(names, node.args, strict=False))
        vals.update({k: v for k, v in kw.items() if k in names})
        base = self.expr(vals.get("base"))
        strides = vals.get("strides")
        if isinstance(strides, (ast.Tuple, ast.List)) and len(strides.elts) == 2:
            first = self.expr(strides.elts[0])
            last = self.expr(strides.elts[1])
            if first.const == 1 and last.const != 1:
                self.emit(
                    "block_ptr_swapped_strides",
                    node,
                    ast.unparse(strides),
                    None,
                    f"make_block_ptr strides {ast.unparse(strides)} put the unit stride first",
                )
        block = self.expr(vals.get("block_shape"))
        dims = None
        if block.items is not None:
            dims = tuple(i.const if isinstance(i.const, int) else None for i in block.items)
        return Val(shape=dims, dtype=base.dtype, ptr=True, block_ptr=True)

    def _note_access(self, ptr: Val, node: ast.AST) -> None:
        if ptr.root and ptr.shape and len(ptr.shape) >= 2:
            self.tiled_2d.setdefault(ptr.root, getattr(node, "lineno", 0))

    def _check_tile(self, v: Val, node: ast.AST) -> None:
        n = v.numel
        if v.is_tensor and n is not None and n >= MAX_TILE_ELEMENTS:
            self.emit(
                "tile_too_large", node, n, MAX_TILE_ELEMENTS, f"a tile of {n:,} elements (shape {list(v.shape or ())})"
            )

    # --- end of kernel ------------------------------------------------------------------------
    def _alignment(self) -> None:
        """Tensors accessed with 2-D tiles whose last dimension is not 32 B (512 B with tl.dot) aligned."""
        align = (
            self.chip.align_cube_last_dim_bytes if self.ctx.uses_dot else self.chip.align_vector_last_dim_bytes
        ) or 0
        if not align:
            return
        for param, line in self.tiled_2d.items():
            if param not in self.ctx.pointer_tensors:
                continue
            shape, dt = self.ctx.pointer_tensors[param]
            if len(shape) < 2 or not shape[-1]:
                continue
            last_bytes = int(shape[-1]) * _BYTES.get(dt, 4)
            if last_bytes % align:
                self.out.add(
                    "last_dim_alignment",
                    self.k.name,
                    line,
                    last_bytes,
                    align,
                    f"{param} (shape {list(shape)}, {dt}) is read or written in 2-D tiles and its last dimension "
                    f"is {last_bytes} B, not a multiple of {align} B",
                )

    def _finish(self) -> None:
        if self.uses_descriptors and self.uses_plain_memory:
            self.emit("descriptor_mixing", self.k.node, None, None, "tensor descriptors mixed with tl.load / tl.store")
        self._alignment()
        ub = self.chip.ub_bytes
        if not ub:
            return
        factor = 2 if self.chip.multibuffer_default else 1
        vector_loads = [
            (size, region)
            for size, name, region in self.load_tiles.values()
            if not (name and name in self.dot_operand_vars)
        ]
        biggest = max((size for size, _ in vector_loads), default=0)
        total = others = 0
        for region, names in self.region_names.items():
            # a variable holding a loaded tile is counted once, in the loads, unless it holds a converted
            # copy; accumulators of tl.dot are not in UB
            region_others = sum(
                self.named_tiles[n]
                for n in names
                if n not in self.dot_vars and self.load_vars.get(n) != self.named_tiles[n]
            )
            region_loads = sum(size for size, r in vector_loads if r == region)
            if factor * region_loads + region_others > total:
                total = factor * region_loads + region_others
                others = region_others
        where = self.k.node
        label = f" [{self.ctx.label}]" if self.ctx.label else ""
        if biggest * factor > ub:
            self.emit(
                "ub_overflow",
                where,
                biggest * factor,
                ub,
                f"one loaded tile of {biggest:,} B x multibuffer {factor} = {biggest * factor:,} B exceeds the "
                f"{ub:,} B Unified Buffer of {self.chip.name}{label}",
            )
        elif total > ub:
            self.emit(
                "ub_pressure",
                where,
                total,
                ub,
                f"live tiles need about {total:,} B (loaded tiles x {factor} + {others:,} B of other tiles), more "
                f"than the {ub:,} B Unified Buffer of {self.chip.name}{label}",
            )


def _replace(v: Val, **changes: Any) -> Val:
    data = dict(v.__dict__)
    data.update(changes)
    return Val(**data)


def _fold(op: ast.operator, a: Any, b: Any) -> Any:
    if not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
        return UNKNOWN
    table = {
        ast.Add: lambda: a + b,
        ast.Sub: lambda: a - b,
        ast.Mult: lambda: a * b,
        ast.FloorDiv: lambda: a // b if b else UNKNOWN,
        ast.Mod: lambda: a % b if b else UNKNOWN,
        ast.Div: lambda: a / b if b else UNKNOWN,
        ast.LShift: lambda: a << b,
        ast.RShift: lambda: a >> b,
        ast.Pow: lambda: a**b if abs(b) < 64 else UNKNOWN,
    }
    fn = table.get(type(op))
    return fn() if fn else UNKNOWN


_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_, ast.Invert: operator.invert}
_COMPARE = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}


def _short(node: ast.AST) -> str:
    try:
        text = ast.unparse(node)
    except Exception:  # noqa: BLE001
        return "?"
    return text if len(text) <= 70 else text[:67] + "..."


# ----------------------------------------------------------------------------- launch-level rules


def _launch_dict(launch: LaunchRecord | dict[str, Any]) -> dict[str, Any]:
    if isinstance(launch, LaunchRecord):
        return {
            "kernel": launch.kernel,
            "grid": list(launch.grid),
            "constexprs": dict(launch.constexprs),
            "num_warps": launch.num_warps,
            "num_stages": launch.num_stages,
            "tensor_args": [list(t) for t in launch.tensor_args],
        }
    if isinstance(launch, dict):
        return {
            "kernel": str(launch.get("kernel", "?")),
            "grid": list(launch.get("grid") or [1]),
            "constexprs": dict(launch.get("constexprs") or {}),
            "num_warps": launch.get("num_warps"),
            "num_stages": launch.get("num_stages"),
            "tensor_args": [list(t) for t in launch.get("tensor_args") or []],
        }
    raise TypeError(f"launches must hold LaunchRecord or dict items, got {type(launch).__name__}")


def _tensor_dtype(name: Any) -> str | None:
    return _TORCH_DTYPES.get(str(name).replace("torch.", ""))


def _pointer_params(module: _Module, kernel: _Kernel) -> list[str]:
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
            name = _normalise(_dotted(expr.func), module.aliases) or ""
            if name in ("tl.make_block_ptr", "tl.advance", "tl.multiple_of") and expr.args:
                root(expr.args[0], depth + 1)
            for kw in expr.keywords:
                if kw.arg == "base":
                    root(kw.value, depth + 1)

    for node in ast.walk(kernel.node):
        if isinstance(node, ast.Call):
            name = _normalise(_dotted(node.func), module.aliases) or ""
            leaf = name.split(".")[-1] if name.startswith("tl.") else ""
            if leaf in ("load", "store", "make_block_ptr", "make_tensor_descriptor") or leaf in _ATOMICS:
                first = node.args[0] if node.args else None
                if first is None:
                    first = next((k.value for k in node.keywords if k.arg in ("pointer", "base")), None)
                root(first)
    named = {p for p in kernel.params if p.lower().endswith("ptr")}
    ordered = [p for p in kernel.params if p in roots or p in named]
    return [p for p in ordered if p not in kernel.constexpr_params]


def _contexts(module: _Module, kernel: _Kernel, launches: list[dict[str, Any]]) -> list[_Context]:
    pointers = _pointer_params(module, kernel)
    uses_dot = _uses_dot(module, kernel)
    seen: set[str] = set()
    out: list[_Context] = []
    for launch in launches:
        tensors = [
            (list(t[0]) if t else [], _tensor_dtype(t[1]) if len(t) > 1 else None) for t in launch["tensor_args"]
        ]
        matched = len(pointers) == len(tensors)
        mapping = {p: t[1] for p, t in zip(pointers, tensors, strict=False) if t[1]} if matched else {}
        shapes = {p: (t[0], t[1]) for p, t in zip(pointers, tensors, strict=False) if t[1]} if matched else {}
        key = repr((sorted(launch["constexprs"].items(), key=str), sorted(shapes.items())))
        if key in seen:
            continue
        seen.add(key)
        out.append(
            _Context(
                dict(launch["constexprs"]), mapping, _ctx_label(launch["constexprs"]), shapes, uses_dot, tuple(pointers)
            )
        )
    if out:
        return out
    for cfg in kernel.autotune_configs:
        out.append(_Context(dict(cfg), {}, _ctx_label(cfg), uses_dot=uses_dot, pointers=tuple(pointers)))
    if out:
        return out
    site_values = _call_site_constexprs(module, kernel)
    return [_Context(site_values, {}, _ctx_label(site_values), uses_dot=uses_dot, pointers=tuple(pointers))]


def _ctx_label(values: dict[str, Any]) -> str:
    items = [f"{k}={v}" for k, v in values.items() if isinstance(v, (int, float, str)) and not isinstance(v, bool)]
    return ", ".join(items[:6])


def _call_site_constexprs(module: _Module, kernel: _Kernel) -> dict[str, Any]:
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
                        lit = _literal(node.value, local)
                        if lit is not UNKNOWN:
                            local.setdefault(targets.id, lit)
                    elif isinstance(targets, ast.Tuple) and isinstance(node.value, ast.Tuple):
                        for t, v in zip(targets.elts, node.value.elts, strict=False):
                            lit = _literal(v, local)
                            if isinstance(t, ast.Name) and lit is not UNKNOWN:
                                local.setdefault(t.id, lit)
            break
    values: dict[str, Any] = {}
    for kw in site.keywords:
        if kw.arg in kernel.constexpr_params:
            lit = _literal(kw.value, local)
            if lit is not UNKNOWN:
                values[kw.arg] = lit
    positional = [p for p in kernel.params]
    for p, a in zip(positional, site.args, strict=False):
        if p in kernel.constexpr_params:
            lit = _literal(a, local)
            if lit is not UNKNOWN:
                values[p] = lit
    return values


def _uses_dot(module: _Module, kernel: _Kernel, seen: set[str] | None = None) -> bool:
    seen = seen or set()
    seen.add(kernel.name)
    for node in ast.walk(kernel.node):
        if isinstance(node, ast.Call):
            name = _normalise(_dotted(node.func), module.aliases) or ""
            if name in ("tl.dot", "tl.dot_scaled"):
                return True
            callee = module.kernels.get(name)
            if callee is not None and callee.name not in seen and _uses_dot(module, callee, seen):
                return True
    return False


def _launch_rules(module: _Module | None, launch: dict[str, Any], chip: ChipProfile, out: _Findings) -> None:
    name = launch["kernel"]
    kernel = module.kernels.get(name) if module else None
    line = kernel.node.lineno if kernel else 0
    grid = [int(g) for g in launch["grid"]] or [1]
    programs = math.prod(grid)
    if programs > chip.max_grid:
        out.add(
            "max_grid",
            name,
            line,
            programs,
            chip.max_grid,
            f"grid {tuple(grid)} launches {programs:,} programs, above {chip.name}'s limit of {chip.max_grid:,}",
        )
    uses_dot = _uses_dot(module, kernel) if (module and kernel) else False
    slots = chip.parallel_slots(uses_dot)
    sizes = []
    for t in launch["tensor_args"]:
        shape = t[0] if t else []
        dt = _tensor_dtype(t[1]) if len(t) > 1 else None
        numel = math.prod(int(d) for d in shape) if shape else 1
        sizes.append(numel * _BYTES.get(dt or "fp32", 4))
    total_bytes = sum(sizes)
    per_program = total_bytes / max(1, programs)
    if programs > MAX_ROUNDS * slots and per_program < FEW_BYTES_PER_PROGRAM:
        rounds = -(-programs // slots)
        cores = "cube" if uses_dot else "vector"
        out.add(
            "grid_oversubscribed",
            name,
            line,
            programs,
            MAX_ROUNDS * slots,
            f"{programs:,} programs on {slots} {cores} cores of {chip.name} = {rounds} rounds, each program moving "
            f"~{per_program / 1024:.1f} KiB",
        )
    if launch.get("num_warps") is not None or launch.get("num_stages") is not None:
        parts = [f"{k}={launch[k]}" for k in ("num_warps", "num_stages") if launch.get(k) is not None]
        out.add("num_warps_stages", name, line, ", ".join(parts), None, f"launched with {', '.join(parts)}")
    for i, t in enumerate(launch["tensor_args"]):
        shape = t[0] if t else []
        dt = _tensor_dtype(t[1]) if len(t) > 1 else None
        if dt in ("fp64", "uint16", "uint32", "uint64", "uint8"):
            out.add(
                "unsupported_dtype",
                name,
                line,
                dt,
                None,
                f"tensor argument {i} is {dt}",
                severity=WARNING if dt == "uint8" else ERROR,
            )


# ----------------------------------------------------------------------------- host-code rules


def _host_rules(module: _Module, out: _Findings) -> None:
    kernel_nodes = {id(k.node) for k in module.kernels.values()}
    for fn in module.functions.values():
        if id(fn) in kernel_nodes or fn.name == "__init__":
            continue
        for node in ast.walk(fn):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("item", "tolist")
                and not node.args
            ):
                out.add(
                    "item_in_forward",
                    fn.name,
                    node.lineno,
                    f".{node.func.attr}()",
                    None,
                    f"calls {_short(node)} in host code (a device synchronisation per call)",
                )
    for name, sites in module.call_sites.items():
        for site in sites:
            for kw in site.keywords:
                if kw.arg in ("num_warps", "num_stages"):
                    out.add(
                        "num_warps_stages",
                        name,
                        site.lineno,
                        f"{kw.arg}={_short(kw.value)}",
                        None,
                        f"launch passes {kw.arg}={_short(kw.value)}",
                    )
    for kernel in module.kernels.values():
        if kernel.autotune_warps:
            out.add(
                "num_warps_stages",
                kernel.name,
                kernel.node.lineno,
                "autotune config",
                None,
                "autotune configs set num_warps / num_stages",
            )


# ----------------------------------------------------------------------------- entry points


def run_ascend_checks(
    source: str,
    launches: Iterable[LaunchRecord | dict[str, Any]] | None,
    chip: str | ChipProfile = "910B3",
) -> list[dict[str, Any]]:
    """Check a candidate against triton-ascend's documented limits.

    Args:
        source: the candidate's Python source.
        launches: the launch records of one or more forward calls (``EvalResult.launches`` or
            their dicts); may be empty, then only static rules and call-site constants are used.
        chip: an Ascend chip profile (name, JSON path or :class:`ChipProfile`).

    Returns:
        One dict per finding: ``rule``, ``severity`` (``"error"`` / ``"warning"``), ``value``,
        ``limit``, ``message``, ``fix``, ``kb_id``, ``kernel``, ``line``; errors first. An
        unparsable source gives ``[]`` (the static stage reports syntax errors).
    """
    profile = resolve_chip(chip)
    if not profile.is_ascend:
        raise ValueError(f"chip must be an Ascend profile for the Ascend checks, got {profile.name!r} ({profile.kind})")
    if not isinstance(source, str):
        raise TypeError(f"source must be a str, got {type(source).__name__}")
    records = [_launch_dict(launch) for launch in (launches or [])]
    module = _parse_module(source)
    out = _Findings()
    for launch in records:
        _launch_rules(module, launch, profile, out)
    if module is None:
        return out.result()
    _host_rules(module, out)
    for kernel in module.kernels.values():
        mine = [launch for launch in records if launch["kernel"] == kernel.name]
        for ctx in _contexts(module, kernel, mine):
            _KernelAnalyzer(module, kernel, ctx, profile, out).run()
    return out.result()


def format_ascend_report(result: Any) -> str:
    """The Ascend findings and the cost-model estimate of an ``EvalResult`` (or its dict) as text."""
    data = result.to_dict() if hasattr(result, "to_dict") else dict(result)
    checks = data.get("ascend_checks") or []
    lines: list[str] = []
    if checks:
        errors = sum(1 for c in checks if c.get("severity") == ERROR)
        lines.append(f"Ascend checks: {errors} error(s), {len(checks) - errors} warning(s)")
        for c in checks:
            value = "" if c.get("value") is None else f" (value {c.get('value')}"
            if value and c.get("limit") is not None:
                value += f", limit {c.get('limit')}"
            value += ")" if value else ""
            lines.append(f"  [{c.get('severity')}] {c.get('rule')}: {c.get('message')}{value} (kb: {c.get('kb_id')})")
    else:
        lines.append("Ascend checks: no findings")
    est = data.get("estimate")
    if est:
        lines.append(
            f"Cost-model estimate ({est.get('label', 'estimate')}, chip {est.get('chip')}): "
            f"{_fmt_ms(est.get('est_ms'))} ms; roofline floor {_fmt_ms(est.get('roofline_ms'))} ms; "
            f"roofline fraction {_fmt_frac(est.get('est_roofline_fraction'))}"
            + (f"; est. speedup vs eager PyTorch {est['est_speedup']:.2f}x" if est.get("est_speedup") else "")
        )
        if est.get("bound"):
            lines.append(f"  bound by: {est['bound']}; programs {est.get('programs')}, rounds {est.get('rounds')}")
        for a in est.get("assumptions") or []:
            lines.append(f"  assumption: {a}")
    return "\n".join(lines)


def _fmt_ms(value: Any) -> str:
    return "-" if not isinstance(value, (int, float)) else f"{value:.4g}"


def _fmt_frac(value: Any) -> str:
    return "-" if not isinstance(value, (int, float)) else f"{value:.3f}"


def capture_launches(task: Any, code: str, profile: str = "full", device: str = "meta") -> list[LaunchRecord]:
    """Launch records of one ``ModelNew`` forward at ``profile``'s shapes, without running kernels.

    Tensors live on ``device`` (``meta`` by default: no memory, no data), every Triton launch is
    recorded (grid, constexprs, num_warps / num_stages, tensor shapes and dtypes) and skipped.
    Runs the candidate's host code in this process: use it for trusted code (reference
    solutions, your own kernels), never for untrusted model output. Imports torch and triton.

    Raises:
        RuntimeError: the host code needs real data (e.g. ``.item()``) or fails on ``device``.
    """
    import inspect

    import torch

    from ascend_kernel_gym.tasks.runtime import exec_source, instantiate

    try:
        from triton.runtime.jit import JITFunction
    except ImportError as exc:  # pragma: no cover
        raise RuntimeError("triton is required to capture launches") from exc
    classes: list[type] = [JITFunction]
    try:
        from triton.runtime.interpreter import InterpretedFunction

        classes.append(InterpretedFunction)
    except ImportError:  # pragma: no cover
        pass
    tm = instantiate(task, profile)
    records: list[LaunchRecord] = []

    def recording_run(self: Any, *args: Any, grid: Any, warmup: bool = False, **kwargs: Any) -> None:
        if warmup:
            return None
        fn = getattr(self, "fn", None)
        sig = inspect.signature(fn)
        try:
            bound = sig.bind_partial(*args, **{k: v for k, v in kwargs.items() if k in sig.parameters})
            bound.apply_defaults()
            values = dict(bound.arguments)
        except TypeError:
            values = dict(zip(sig.parameters, args, strict=False))
        if callable(grid):
            grid = grid(values)
        grid_t = [int(g) for g in grid] if isinstance(grid, (tuple, list)) else [int(grid)]
        constexprs = {}
        for pname, param in sig.parameters.items():
            ann = param.annotation
            text = ann if isinstance(ann, str) else getattr(ann, "__name__", "")
            if str(text).split(".")[-1] == "constexpr" and pname in values:
                v = values[pname]
                constexprs[pname] = v if isinstance(v, (int, float, str, bool)) or v is None else repr(v)[:60]
        tensors = [
            [list(v.shape), str(v.dtype).replace("torch.", "")] for v in values.values() if isinstance(v, torch.Tensor)
        ]
        nw, ns = kwargs.get("num_warps"), kwargs.get("num_stages")
        records.append(
            LaunchRecord(
                kernel=fn.__name__,
                grid=grid_t,
                constexprs=constexprs,
                num_warps=nw if isinstance(nw, int) else None,
                num_stages=ns if isinstance(ns, int) else None,
                tensor_args=tensors,
            )
        )
        return None

    saved = [(cls, cls.run) for cls in classes]
    try:
        for cls in classes:
            cls.run = recording_run
        dev = torch.device(device)
        torch.manual_seed(0)
        with dev:  # factories without a device argument allocate on ``device`` (no data on meta)
            init = tm.get_init_inputs()
            inputs = [x.to(dev) if isinstance(x, torch.Tensor) else x for x in tm.get_inputs()]
        module = _exec_candidate(code, exec_source)
        with dev:
            model = module.ModelNew(*init)
        if isinstance(model, torch.nn.Module):
            model = model.to(dev)
        with torch.no_grad():
            model(*inputs)
    except Exception as exc:
        raise RuntimeError(f"capturing launches on {device} failed: {type(exc).__name__}: {exc}") from exc
    finally:
        for cls, run in saved:
            cls.run = run
    return records


def _exec_candidate(code: str, exec_source: Any) -> Any:
    """Run ``code`` as a module from a real file (Triton reads kernel source with ``inspect``)."""
    import atexit
    import os
    import shutil
    import sys
    import tempfile
    import uuid

    name = f"akg_capture_{uuid.uuid4().hex[:12]}"
    directory = tempfile.mkdtemp(prefix="akg-capture-")
    atexit.register(shutil.rmtree, directory, True)  # the file must outlive the kernels' first calls
    path = os.path.join(directory, f"{name}.py")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(code)
    module = exec_source(code, name, path)
    sys.modules[name] = module
    return module
