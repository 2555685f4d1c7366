"""Facts read from triton-ascend's IR: the ``ttadapter`` (Linalg / MemRef) text of a lowered kernel,
and the ``ttir`` text of a kernel the adapter could not lower.

:func:`adapter_facts` reads the core type the compiler chose (``mix_mode``: ``aiv`` vector cores
only, ``aic`` cube only, ``mix`` both), every on-chip allocation (``memref.alloc``) with its bytes,
source line, whether it sits in a loop and whether it feeds a ``linalg.matmul`` (a cube operand,
staged in L1, rather than a vector buffer in UB), the matmuls, the element-wise accesses the
adapter had to split into scalar loops (``DiscreteMemAccess``), DMA copies and loops.
:func:`pointer_choices` finds, in the ``ttir``, pointers chosen at run time (``arith.select`` or an
``scf.if`` that yields a pointer): the constructs triton-ascend's adapter cannot lower.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

#: bytes per element of MLIR element types
ELEMENT_BYTES = {"i1": 1, "i8": 1, "i16": 2, "i32": 4, "i64": 8, "f16": 2, "bf16": 2, "f32": 4, "f64": 8, "index": 8}
_ALLOC = re.compile(r"(%[\w.]+) = memref\.alloc\(\)[^:]*: memref<([^>]*)>")
_LOC_USE = re.compile(r"loc\((#loc\d*)\)")
_TO_TENSOR = re.compile(r"(%[\w.]+) = bufferization\.to_tensor (%[\w.]+)")
_MATMUL = re.compile(r"linalg\.(batch_)?matmul\b.*?ins\(([^:)]*):([^)]*)\)\s*outs\(([^:)]*):([^)]*)\)")
_TENSOR_TYPE = re.compile(r"tensor<([^>]*)>")
_LOC_DEF = re.compile(r'^(#loc\d*) = loc\("[^"]*":(\d+):(\d+)\)', re.MULTILINE)
_CONST = re.compile(r"(%[\w.]+) = arith\.constant (-?\d+) : (?:index|i32|i64)")
_FOR = re.compile(r"scf\.for %[\w.]+ = (%[\w.]+|-?\d+) to (%[\w.]+|-?\d+) step (%[\w.]+|-?\d+)")
_MIX_MODE = re.compile(r'mix_mode\s*=\s*"([^"]+)"')
_IF_PTR = re.compile(r"scf\.if [^\n]*-> \(([^)]*!tt\.ptr[^)]*)\)")
_LOOP_OPEN = ("scf.for", "scf.while", "scf.parallel")


def shape_bytes(text: str) -> tuple[list[int | None], str, int | None]:
    """``128x64xf16`` -> ([128, 64], "f16", 16384); a dynamic dimension (``?``) gives ``None`` bytes."""
    parts = text.split(",")[0].strip().split("x")
    dims: list[int | None] = [int(p) if p.isdigit() else None for p in parts[:-1]]
    element = parts[-1].strip()
    size = ELEMENT_BYTES.get(element)
    if size is None or any(d is None for d in dims):
        return dims, element, None
    total = size
    for d in dims:
        total *= int(d or 0)
    return dims, element, total


def loc_lines(ir_text: str) -> dict[str, int]:
    """``#locN`` -> source line, from the location table at the end of an IR dump."""
    return {m.group(1): int(m.group(2)) for m in _LOC_DEF.finditer(ir_text)}


@dataclass
class Allocation:
    """One ``memref.alloc``: a buffer in on-chip memory, one per program."""

    name: str
    shape: list[int | None]
    element: str
    bytes: int | None
    line: int | None
    in_loop: bool
    cube_operand: bool = False


@dataclass
class AdapterFacts:
    """What the lowered IR says about one kernel (all sizes per program, in bytes)."""

    core_type: str | None
    allocations: list[Allocation] = field(default_factory=list)
    matmuls: list[dict[str, Any]] = field(default_factory=list)
    scalar_access_loops: int = 0
    scalar_accesses: int | None = 0
    discrete_ops: int = 0
    dma_copies: int = 0
    loops: int = 0
    dynamic_allocations: int = 0
    largest_tensor_bytes: int = 0

    @property
    def vector_bytes(self) -> int:
        """Bytes of the buffers the vector unit works in (UB)."""
        return sum(a.bytes or 0 for a in self.allocations if not a.cube_operand)

    @property
    def cube_bytes(self) -> int:
        """Bytes of the buffers staged for the cube unit (L1)."""
        return sum(a.bytes or 0 for a in self.allocations if a.cube_operand)

    @property
    def accumulator_bytes(self) -> int:
        """The largest matmul result tile (L0C holds it)."""
        return max((int(m.get("acc_bytes") or 0) for m in self.matmuls), default=0)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["vector_bytes"] = self.vector_bytes
        data["cube_bytes"] = self.cube_bytes
        data["accumulator_bytes"] = self.accumulator_bytes
        return data


def _operands(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def _trip_count(line: str, constants: dict[str, int]) -> int | None:
    match = _FOR.search(line)
    if not match:
        return None
    low, high, step = (constants.get(v, int(v) if v.lstrip("-").isdigit() else None) for v in match.groups())
    if low is None or high is None or not step:
        return None
    return max(0, (high - low + step - 1) // step)


def adapter_facts(ir_text: str) -> AdapterFacts:
    """The facts of one kernel's ``ttadapter`` IR (see the module docstring)."""
    mix = _MIX_MODE.search(ir_text)
    facts = AdapterFacts(core_type=mix.group(1) if mix else None)
    locs = loc_lines(ir_text)
    constants = {m.group(1): int(m.group(2)) for m in _CONST.finditer(ir_text)}
    tensor_of: dict[str, str] = {}
    allocs: dict[str, Allocation] = {}
    stack: list[bool] = []
    pending_trip: list[int | None] = []
    scalar_total: int | None = 0
    for raw in ir_text.splitlines():
        line = raw.strip()
        for _ in range(len(line) - len(line.lstrip("}"))):
            if stack and stack.pop() and pending_trip:
                trip = pending_trip.pop()
                if "{ExtractedLoadOrStore}" in line:
                    facts.scalar_access_loops += 1
                    scalar_total = None if scalar_total is None or trip is None else scalar_total + trip
        if line.endswith("{"):
            opens_loop = any(op in line for op in _LOOP_OPEN)
            is_loop = opens_loop or line.startswith("} do {")
            stack.append(is_loop)
            if is_loop:
                facts.loops += int(opens_loop)
                pending_trip.append(_trip_count(line, constants))
        alloc = _ALLOC.search(line)
        if alloc:
            dims, element, size = shape_bytes(alloc.group(2))
            loc = _LOC_USE.search(line)
            at = locs.get(loc.group(1)) if loc else None
            allocs[alloc.group(1)] = Allocation(alloc.group(1), dims, element, size, at, any(stack))
            if size is None:
                facts.dynamic_allocations += 1
        to_tensor = _TO_TENSOR.search(line)
        if to_tensor:
            tensor_of[to_tensor.group(1)] = to_tensor.group(2)
        matmul = _MATMUL.search(line)
        if matmul:
            ins = _operands(matmul.group(2))
            in_types = _TENSOR_TYPE.findall(matmul.group(3))
            out_types = _TENSOR_TYPE.findall(matmul.group(5))
            for operand in ins:
                source = tensor_of.get(operand)
                if source in allocs:
                    allocs[source].cube_operand = True
            acc = shape_bytes(out_types[0]) if out_types else ([], "", None)
            facts.matmuls.append({
                "batched": bool(matmul.group(1)),
                "a": in_types[0] if in_types else None,
                "b": in_types[1] if len(in_types) > 1 else None,
                "acc": out_types[0] if out_types else None,
                "acc_bytes": acc[2],
            })  # fmt: skip
        if "DiscreteMemAccess" in line:
            facts.discrete_ops += 1
        if "memref.copy" in line:
            facts.dma_copies += 1
        for tensor_type in _TENSOR_TYPE.findall(line):
            size = shape_bytes(tensor_type)[2]
            if size is not None and size > facts.largest_tensor_bytes:
                facts.largest_tensor_bytes = size
    facts.allocations = list(allocs.values())
    facts.scalar_accesses = scalar_total
    return facts


def pointer_choices(ttir_text: str) -> list[dict[str, Any]]:
    """Pointers chosen at run time in ``ttir``: ``[{"kind": "select" | "branch", "line": int | None,
    "in_loop": bool}]`` (a ``tl.where`` between pointers, or a pointer assigned in an ``if``)."""
    locs = loc_lines(ttir_text)
    found: list[dict[str, Any]] = []
    stack: list[bool] = []
    waiting: dict[str, Any] | None = None  # a branch whose line comes from its first located yield
    for raw in ttir_text.splitlines():
        line = raw.strip()
        for _ in range(len(line) - len(line.lstrip("}"))):
            if stack:
                stack.pop()
        loc = _LOC_USE.search(line)
        at = locs.get(loc.group(1)) if loc else None
        if "arith.select" in line and "!tt.ptr" in line:
            found.append({"kind": "select", "line": at, "in_loop": any(stack)})
        if _IF_PTR.search(line):
            waiting = {"kind": "branch", "line": None, "in_loop": any(stack)}
            found.append(waiting)
        elif waiting is not None and "scf.yield" in line and at is not None:
            waiting["line"] = at
            waiting = None
        if line.endswith("{"):
            stack.append(any(op in line for op in _LOOP_OPEN) or line.startswith("} do {"))
    return found
