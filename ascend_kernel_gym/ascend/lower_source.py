"""What the lowering compiles: the candidate's ``@triton.jit`` functions and one signature per launch.

:func:`lowering_module` rebuilds a module that holds only the candidate's ``@triton.jit`` functions
(each at its original line, so compiler messages name the candidate's lines), its imports of
``triton`` / ``math`` and its literal module constants. Nothing else of the candidate survives:
decorators are replaced by a plain ``triton.jit``, and a function whose default values or
annotations are not plain literals or names is left out, so rebuilding the module runs none of
the candidate's code (Triton reads the function bodies as source).

:func:`kernel_specs` turns launch records into Triton signatures: tensor arguments become
``*<dtype>`` for the parameters used as pointers, scalar parameters ``i32`` unless the kernel uses
them as floating-point values (or a launch record says otherwise), constexprs come from the record.
"""

from __future__ import annotations

import ast
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from ascend_kernel_gym.ascend.contexts import launch_dict
from ascend_kernel_gym.ascend.source import ParsedKernel, ParsedModule, dotted, normalise, parse_module, pointer_params
from ascend_kernel_gym.ascend.values import UNKNOWN
from ascend_kernel_gym.evaluation.result import LaunchRecord

#: torch dtype names (as launch records spell them) -> Triton's pointer element types
TORCH_TO_TRITON = {
    "float32": "fp32",
    "float16": "fp16",
    "bfloat16": "bf16",
    "float64": "fp64",
    "int64": "i64",
    "int32": "i32",
    "int16": "i16",
    "int8": "i8",
    "uint8": "u8",
    "uint16": "u16",
    "uint32": "u32",
    "uint64": "u64",
    "bool": "i1",
    "float8_e4m3fn": "fp8e4nv",
    "float8_e5m2": "fp8e5",
}
#: modules whose imports the rebuilt module keeps (everything a kernel body may name)
KEPT_IMPORT_ROOTS = ("triton", "math")
#: parameter names that are floating-point scalars in practice (used when the body does not say)
FLOAT_NAMES = frozenset(
    {"eps", "epsilon", "scale", "sm_scale", "alpha", "beta", "slope", "negative_slope", "momentum", "temperature",
     "lambd", "min_val", "max_val", "softcap", "dropout_p", "p", "inv_scale", "gamma", "theta", "base"}
)  # fmt: skip
_FLOAT_MATH = frozenset({"exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "sigmoid", "erf", "fdiv", "tanh"})
_DATA_CALLS = frozenset({"load", "dot", "sum", "max", "min", "zeros", "full"})
_INT_OPS = (ast.FloorDiv, ast.Mod, ast.LShift, ast.RShift, ast.BitAnd, ast.BitOr, ast.BitXor)
#: the name the rebuilt module's decorator uses for ``triton``
JIT_ALIAS = "_akg_triton_"


@dataclass
class LoweringModule:
    """The rebuilt module and what was left out.

    Attributes:
        text: module source (kernels at their original lines).
        kernels: name -> the parsed ``@triton.jit`` function (each kept one).
        skipped: name -> why that function was left out.
        line_offset: lines the kernels moved down (0 unless the source starts with a decorator).
        parsed: the parsed candidate.
    """

    text: str
    kernels: dict[str, ParsedKernel]
    skipped: dict[str, str]
    line_offset: int
    parsed: ParsedModule

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()


@dataclass
class KernelSpec:
    """One distinct kernel launch to lower: the kernel, its Triton signature and constexpr values.

    ``exact`` is False when part of the signature was inferred (pointer / tensor matching by
    position failed, or scalar types came from the kernel's use of them); ``notes`` says what.
    """

    kernel: str
    signature: dict[str, str]
    constants: dict[str, Any]
    exact: bool = True
    notes: list[str] = field(default_factory=list)
    def_line: int = 0

    @property
    def key(self) -> str:
        data = json.dumps([self.kernel, self.signature, self.constants], sort_keys=True, default=str)
        return hashlib.sha256(data.encode()).hexdigest()[:24]

    def to_dict(self) -> dict[str, Any]:
        return {"kernel": self.kernel, "signature": dict(self.signature), "constants": dict(self.constants),
                "exact": self.exact, "notes": list(self.notes)}  # fmt: skip


def _safe_expr(node: ast.expr | None) -> bool:
    """Whether evaluating ``node`` (a default value or an annotation) can run no code of the candidate:
    literals, names, attribute chains and ``tl.constexpr(<literal>)``."""
    if node is None:
        return True
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, (ast.Name, ast.Attribute)):
        return dotted(node) is not None
    if isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant):
        return True
    if isinstance(node, ast.Call) and not node.keywords and len(node.args) <= 1:
        name = dotted(node.func) or ""
        return name.split(".")[-1] == "constexpr" and all(isinstance(a, ast.Constant) for a in node.args)
    return False


def _unsafe_reason(node: ast.FunctionDef) -> str | None:
    args = node.args
    for value in [*args.defaults, *args.kw_defaults]:
        if not _safe_expr(value):
            return f"a default value of {node.name} is an expression the lowering does not evaluate"
    for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
        if not _safe_expr(arg.annotation):
            return (
                f"the annotation of {node.name}'s parameter {arg.arg} is an expression the lowering does not evaluate"
            )
    if args.vararg or args.kwarg:
        return f"{node.name} takes *args / **kwargs"
    return None


def _preamble(tree: ast.Module, aliases: dict[str, str]) -> list[str]:
    """Imports of triton / math and literal module constants, one statement each."""
    statements: list[str] = []
    future = any(isinstance(n, ast.ImportFrom) and n.module == "__future__" for n in tree.body)
    if future:
        statements.append("from __future__ import annotations")
    statements.append(f"import triton as {JIT_ALIAS}")
    for node in tree.body:
        if isinstance(node, ast.Import) and all(a.name.split(".")[0] in KEPT_IMPORT_ROOTS for a in node.names):
            statements.append(ast.unparse(node))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in KEPT_IMPORT_ROOTS:
            if not node.level:
                statements.append(ast.unparse(node))
    if "tl" not in aliases or aliases.get("tl") == "triton.language":
        statements.append("import triton.language as tl")
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        value = node.value
        wrapped = isinstance(value, ast.Call) and (normalise(dotted(value.func), aliases) or "").endswith("constexpr")
        inner = value.args[0] if wrapped and isinstance(value, ast.Call) and value.args else value
        try:
            literal = ast.literal_eval(inner)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue
        text = repr(literal)
        if wrapped:
            text = f"{JIT_ALIAS}.language.constexpr({text})"
        statements.append(f"{node.targets[0].id} = {text}")
    return statements


def lowering_module(code: str) -> LoweringModule | None:
    """The candidate's ``@triton.jit`` functions in a module of their own; ``None`` when ``code``
    does not parse or has no ``@triton.jit`` function."""
    parsed = parse_module(code)
    if parsed is None or not parsed.kernels:
        return None
    source_lines = code.splitlines()
    kept: dict[str, ParsedKernel] = {}
    skipped: dict[str, str] = {}
    for name, kernel in parsed.kernels.items():
        reason = _unsafe_reason(kernel.node)
        if reason:
            skipped[name] = reason
        else:
            kept[name] = kernel
    first = (
        min((k.node.decorator_list[0].lineno if k.node.decorator_list else k.node.lineno) for k in kept.values())
        if kept
        else 2
    )
    offset = 1 if first <= 1 else 0
    end = max((k.node.end_lineno or k.node.lineno) for k in kept.values()) if kept else 0
    lines = [""] * (end + offset)
    lines[0] = "; ".join(_preamble(parsed.tree, parsed.aliases))
    for kernel in kept.values():
        node = kernel.node
        indent = node.col_offset
        for number in range(node.lineno, (node.end_lineno or node.lineno) + 1):
            text = source_lines[number - 1] if number - 1 < len(source_lines) else ""
            lines[number - 1 + offset] = text[indent:] if text[:indent].strip() == "" else text.lstrip()
        lines[node.lineno - 2 + offset] = f"@{JIT_ALIAS}.jit"
    return LoweringModule("\n".join(lines) + "\n", kept, skipped, offset, parsed)


# --- signatures ---------------------------------------------------------------------------------
def _data_names(kernel: ParsedKernel) -> set[str]:
    """Names that hold loaded or computed floating-point data (not indices): assigned from a load, a
    dot, a reduction or float math, or from an expression that reads such a name."""
    assigned: list[tuple[str, ast.expr]] = []
    for node in ast.walk(kernel.node):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            assigned.append((node.targets[0].id, node.value))
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            assigned.append((node.target.id, node.value))
    data: set[str] = set()
    # who is assigned from each name: data flows along these edges (one walk of each value, then a
    # search over names: linear in the source, however the assignments are ordered)
    readers: dict[str, set[str]] = {}
    for name, value in assigned:
        leaf = (dotted(value.func) or "").split(".")[-1] if isinstance(value, ast.Call) else ""
        if leaf in _DATA_CALLS or leaf in _FLOAT_MATH:
            data.add(name)
        for node in ast.walk(value):
            if isinstance(node, ast.Name):
                readers.setdefault(node.id, set()).add(name)
    pending = list(data)
    while pending:
        for reader in readers.get(pending.pop(), ()):
            if reader not in data:
                data.add(reader)
                pending.append(reader)
    return data


def _reads_data(expr: ast.expr, data: set[str]) -> bool:
    """Whether ``expr`` reads loaded / floating-point data (a data name, or a load / dot / reduction call)."""
    for node in ast.walk(expr):
        if isinstance(node, ast.Name) and node.id in data:
            return True
        if isinstance(node, ast.Call):
            leaf = (dotted(node.func) or "").split(".")[-1]
            if leaf in _DATA_CALLS or leaf in _FLOAT_MATH:
                return True
    return False


def _scalar_kind(param: str, kernel: ParsedKernel, aliases: dict[str, str]) -> str:
    """``i32`` or ``fp32`` for a scalar parameter, from its annotation, its use, then its name."""
    arg = next((a for a in kernel.node.args.args + kernel.node.args.kwonlyargs if a.arg == param), None)
    annotation = (dotted(arg.annotation) or "") if arg is not None and arg.annotation is not None else ""
    leaf = annotation.split(".")[-1]
    if leaf in ("float", "float32", "fp32"):
        return "fp32"
    if leaf in ("int", "int32"):
        return "i32"
    if leaf == "int64":
        return "i64"
    if leaf in ("bool", "int1"):
        return "i1"
    data = _data_names(kernel)
    int_use = float_use = False
    for node in ast.walk(kernel.node):
        if isinstance(node, ast.Call):
            name = normalise(dotted(node.func), aliases) or ""
            short = name.split(".")[-1]
            names = {n.id for a in node.args for n in ast.walk(a) if isinstance(n, ast.Name)}
            if param in names and (name in ("range", "tl.range", "tl.static_range", "tl.cdiv", "triton.cdiv")):
                int_use = True
            if param in names and short in _FLOAT_MATH:
                float_use = True
        elif isinstance(node, ast.BinOp):
            sides = [node.left, node.right]
            here = any(isinstance(s, ast.Name) and s.id == param for s in sides)
            if not here:
                continue
            other = sides[1] if isinstance(sides[0], ast.Name) and sides[0].id == param else sides[0]
            if isinstance(node.op, _INT_OPS):
                int_use = True
            elif isinstance(other, ast.Constant) and isinstance(other.value, float):
                float_use = True
            elif _reads_data(other, data):
                float_use = True
            elif isinstance(other, ast.Call) and (dotted(other.func) or "").split(".")[-1] in ("program_id", "arange"):
                int_use = True
        elif isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(isinstance(o, ast.Name) and o.id == param for o in operands):
                others = [o for o in operands if not (isinstance(o, ast.Name) and o.id == param)]
                if any(isinstance(o, ast.Constant) and isinstance(o.value, float) for o in others):
                    float_use = True
                elif any(_reads_data(o, data) for o in others):
                    float_use = True  # x > threshold
                else:
                    int_use = True  # masks: offs < n
    if int_use:
        return "i32"
    if float_use or param.lower() in FLOAT_NAMES:
        return "fp32"
    return "i32"


def kernel_specs(lowering: LoweringModule, launches: list[LaunchRecord | dict[str, Any]]) -> list[KernelSpec]:
    """One :class:`KernelSpec` per distinct (kernel, signature, constexprs) among ``launches``.

    Launches of kernels the rebuilt module does not hold are skipped; a kernel whose constexpr
    value was not recorded (and has no literal default) gets a spec with ``constants[name]`` set
    to ``None`` and a note (lowering it would fail for a reason that is not the kernel's).
    """
    specs: dict[str, KernelSpec] = {}
    seen: set[str] = set()
    for raw in launches:
        launch = launch_dict(raw)
        kernel = lowering.kernels.get(launch["kernel"])
        if kernel is None:
            continue
        explicit = raw.get("signature") if isinstance(raw, dict) else getattr(raw, "signature", None)
        dtypes = [t[1] if len(t) > 1 else None for t in launch["tensor_args"]]
        key = json.dumps([launch["kernel"], launch["constexprs"], dtypes, explicit], sort_keys=True, default=str)
        if key in seen:  # the same kernel launched again the same way (records differ in grid and shapes)
            continue
        seen.add(key)
        spec = _spec(lowering.parsed, kernel, launch, explicit if isinstance(explicit, dict) else None)
        spec.def_line = kernel.node.lineno
        specs.setdefault(spec.key, spec)
    return list(specs.values())


def _spec(
    parsed: ParsedModule, kernel: ParsedKernel, launch: dict[str, Any], explicit: dict[str, str] | None
) -> KernelSpec:
    constants: dict[str, Any] = {}
    notes: list[str] = []
    for name in kernel.params:
        if name not in kernel.constexpr_params:
            continue
        if name in launch["constexprs"]:
            value = launch["constexprs"][name]
        elif kernel.defaults.get(name, UNKNOWN) is not UNKNOWN:
            value = kernel.defaults[name]
        else:
            value = None
            notes.append(f"constexpr {name} was not recorded")
        if isinstance(value, str) and value.startswith("<") and value.endswith(">"):
            notes.append(f"constexpr {name} is a {value.strip('<>')} the launch record cannot carry")
        constants[name] = value
    runtime = [p for p in kernel.params if p not in kernel.constexpr_params]
    if explicit is not None:
        signature = {p: str(explicit.get(p, "i32")) for p in runtime}
        return KernelSpec(kernel.name, signature, constants, all(p in explicit for p in runtime), notes)
    pointers = [p for p in pointer_params(parsed, kernel) if p in runtime]
    tensors = [TORCH_TO_TRITON.get(str(t[1]), "fp32") if len(t) > 1 else "fp32" for t in launch["tensor_args"]]
    exact = len(pointers) == len(tensors)
    if not exact:
        notes.append(
            f"{len(tensors)} tensor arguments for {len(pointers)} parameters used as pointers: element types guessed"
        )
    signature: dict[str, str] = {}
    pointer_types = dict(zip(pointers, tensors, strict=False))
    for name in runtime:
        if name in pointers:
            signature[name] = "*" + pointer_types.get(name, tensors[-1] if tensors else "fp32")
        else:
            signature[name] = _scalar_kind(name, kernel, parsed.aliases)
    return KernelSpec(kernel.name, signature, constants, exact, notes)
