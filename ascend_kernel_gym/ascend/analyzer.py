"""The kernel analyser: a small abstract interpreter over one ``@triton.jit`` function.

It walks the kernel's statements with one :class:`~ascend_kernel_gym.ascend.contexts.AnalysisContext`
(constexpr values, pointer dtypes and shapes), follows shapes, dtypes and flags through
assignments (:class:`~ascend_kernel_gym.ascend.values.Val`) and reports the kernel-level rules:
int64 index arithmetic, slicing, control flow, ``tl.dot`` options and tile sizes, atomics, dtypes,
pointer offsets, 2-D alignment and the Unified Buffer footprint of the live tiles. Nothing runs.
"""

from __future__ import annotations

import ast
import contextlib
from collections.abc import Sequence
from typing import Any

from ascend_kernel_gym.ascend.chips import ChipProfile
from ascend_kernel_gym.ascend.contexts import AnalysisContext
from ascend_kernel_gym.ascend.findings import Findings
from ascend_kernel_gym.ascend.rules import MAX_ARANGE, MAX_TILE_ELEMENTS
from ascend_kernel_gym.ascend.source import ParsedKernel, ParsedModule, dotted, literal, normalise, snippet
from ascend_kernel_gym.ascend.values import (
    ATOMICS,
    COMPARE_OPS,
    DESCRIPTOR_CALLS,
    DTYPE_BYTES,
    FLOATS,
    REDUCTIONS,
    SCANS,
    TL_DTYPES,
    UNARY_OPS,
    UNKNOWN,
    UNSUPPORTED_CODE_DTYPES,
    Val,
    broadcast,
    const_val,
    fold,
    promote,
    replace_val,
)


class KernelAnalyzer:
    """Walks one kernel with one set of constexpr values and pointer dtypes."""

    def __init__(
        self, module: ParsedModule, kernel: ParsedKernel, ctx: AnalysisContext, chip: ChipProfile, out: Findings
    ) -> None:
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
        return normalise(dotted(func), self.m.aliases)

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
            val = const_val(value) if value is not UNKNOWN else Val()
            if isinstance(value, str) and value in TL_DTYPES:
                val.dtype_obj = TL_DTYPES[value]
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
        if not (value.loaded or (value.dtype in FLOATS)):
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
        return const_val(node.value)

    def e_Name(self, node: ast.Name) -> Val:  # noqa: N802
        if node.id in self.env:
            if node.id in self.named_tiles:
                self.region_names[self.region].add(node.id)
            return self.env[node.id]
        if node.id in self.m.constants:
            return const_val(self.m.constants[node.id])
        target = self.m.aliases.get(node.id)
        if target is not None:
            return Val(module=normalise(node.id, self.m.aliases))
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
            if leaf in TL_DTYPES:
                dt = TL_DTYPES[leaf]
                if dt in UNSUPPORTED_CODE_DTYPES:
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
            return Val(items=[const_val(d) if d is not None else Val() for d in base.shape])
        return Val()

    def e_Subscript(self, node: ast.Subscript) -> Val:  # noqa: N802
        base = self.expr(node.value)
        index = node.slice
        elts = index.elts if isinstance(index, ast.Tuple) else [index]
        if base.items is not None and not base.is_tensor:
            idx = literal(index)
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
        return replace_val(base, shape=tuple(new_shape))

    def e_UnaryOp(self, node: ast.UnaryOp) -> Val:  # noqa: N802
        v = self.expr(node.operand)
        if v.const is not UNKNOWN:
            try:
                return const_val(UNARY_OPS[type(node.op)](v.const))
            except Exception:  # noqa: BLE001 - unknown operator or operand type: not a constant
                return v
        return replace_val(v, const=UNKNOWN)

    def e_BinOp(self, node: ast.BinOp) -> Val:  # noqa: N802
        return self.binop(node.op, self.expr(node.left), self.expr(node.right), node)

    def binop(self, op: ast.operator, a: Val, b: Val, node: ast.AST) -> Val:
        if a.const is not UNKNOWN and b.const is not UNKNOWN and not isinstance(a.const, tuple):
            try:
                value = fold(op, a.const, b.const)
            except Exception:  # noqa: BLE001
                value = UNKNOWN
            if value is not UNKNOWN:
                return const_val(value)
        shape = broadcast(a.shape, b.shape)
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
        dtype = promote(a, b)
        if isinstance(op, ast.Div) and dtype not in FLOATS:
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
                f"int64 arithmetic on a tensor ({snippet(node)})",
            )
        self._check_tile(result, node)
        return result

    def _pointer_offset(self, off: Val, node: ast.AST) -> None:
        if off.where:
            self.emit("where_pointer", node, None, None, f"pointer offsets computed with tl.where ({snippet(node)})")
        if off.loaded and off.is_tensor:
            self.emit(
                "indirect_access",
                node,
                None,
                None,
                f"pointer offsets come from loaded data, a gather / scatter ({snippet(node)})",
            )
        if off.divmod:
            self.emit("div_mod_offsets", node, None, None, f"tensor // or % in pointer offsets ({snippet(node)})")

    def e_Compare(self, node: ast.Compare) -> Val:  # noqa: N802
        vals = [self.expr(node.left)] + [self.expr(c) for c in node.comparators]
        shape = broadcast(*(v.shape for v in vals))
        ints = all((v.dtype or "int32").startswith(("int", "uint")) and not v.ptr for v in vals)
        any_tensor = any(v.is_tensor for v in vals)
        consts = [v.const for v in vals]
        if all(c is not UNKNOWN for c in consts) and len(node.ops) == 1 and type(node.ops[0]) in COMPARE_OPS:
            with contextlib.suppress(Exception):
                return const_val(bool(COMPARE_OPS[type(node.ops[0])](consts[0], consts[1])))
        return Val(
            shape=shape,
            dtype="int1",
            loaded=any(v.loaded for v in vals),
            int_cmp=bool(ints and any_tensor),
        )

    def e_BoolOp(self, node: ast.BoolOp) -> Val:  # noqa: N802
        vals = [self.expr(v) for v in node.values]
        return Val(shape=broadcast(*(v.shape for v in vals)), dtype="int1")

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
                    return const_val(
                        {"min": min, "max": max, "abs": abs, "int": int, "float": float}[func.id](
                            *[v.const for v in vals]
                        )
                    )
                except Exception:  # noqa: BLE001
                    return Val()
            return Val()
        if isinstance(func, ast.Attribute):
            recv_name = normalise(dotted(func.value), self.m.aliases) or ""
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
        if attr in REDUCTIONS:
            return self._reduce(attr, base, args[0] if args else kwargs.get("axis", Val(const=None)), node)
        if attr in ("item", "tolist"):
            self.emit("tensor_slicing", node, attr, None, f".{attr}() on a tensor inside a kernel")
        return Val(shape=base.shape, dtype=base.dtype) if base.is_tensor else Val()

    # --- tl.* ---------------------------------------------------------------------------------
    def tl_call(self, fn: str, node: ast.Call) -> Val:
        leaf = fn.split(".")[-1]
        if leaf in TL_DTYPES and fn.count(".") == 0:
            self.emit(
                "dtype_call_cast", node, ast.unparse(node)[:40], None, f"casts by calling a dtype ({snippet(node)})"
            )
            for a in node.args:
                self.expr(a)
            return Val(dtype=TL_DTYPES[leaf])
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
        if leaf in ATOMICS:
            return self._atomic(leaf, node, arg, kw_nodes)
        if leaf == "dot":
            return self._dot(node, arg, kw_nodes)
        if leaf == "dot_scaled":
            self.emit("dot_scaled", node, None, None, "uses tl.dot_scaled")
            for a in node.args:
                self.expr(a)
            return Val(from_dot=True)
        if leaf in REDUCTIONS:
            x = self.expr(arg(0, "input"))
            axis = self.expr(arg(1, "axis"))
            for k, v in kw_nodes.items():
                if k not in ("input", "axis"):
                    self.expr(v)
            return self._reduce(leaf, x, axis, node, keep_dims=literal(kw_nodes.get("keep_dims")) is True)
        if leaf in SCANS:
            x = self.expr(arg(0, "input"))
            if leaf == "cumsum" and x.dtype in ("fp16", "bf16"):
                self.emit("fp16_reduction", node, x.dtype, "fp32", f"tl.{leaf} over {x.dtype} data")
            return replace_val(x, const=UNKNOWN, from_dot=False)
        if leaf == "sort":
            x = self.expr(arg(0, "x"))
            if x.dtype in ("int32", "int64", "uint8", "fp64", "int1"):
                self.emit("sort_dtype", node, x.dtype, None, f"tl.sort on {x.dtype} data")
            return replace_val(x, const=UNKNOWN)
        if leaf == "where":
            cond, a, b = self.expr(arg(0, "condition")), self.expr(arg(1, "x")), self.expr(arg(2, "y"))
            if cond.int_cmp:
                self.emit(
                    "int_compare_in_where",
                    node,
                    None,
                    None,
                    f"tl.where condition compares integer tensors ({snippet(node.args[0]) if node.args else ''})",
                )
            if a.ptr or b.ptr:
                self.emit("where_pointer", node, None, None, f"tl.where selects between pointers ({snippet(node)})")
            shape = broadcast(cond.shape, a.shape, b.shape)
            v = Val(
                shape=shape,
                dtype=promote(a, b),
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
            return replace_val(x, shape=dims if dims else x.shape, const=UNKNOWN)
        if leaf in ("trans", "permute"):
            x = self.expr(arg(0, "input"))
            return replace_val(x, shape=tuple(reversed(x.shape)) if x.shape else x.shape)
        if leaf in ("expand_dims",):
            x = self.expr(arg(0, "input"))
            axis = self.expr(arg(1, "axis")).const
            if x.shape is not None and isinstance(axis, int):
                dims = list(x.shape)
                dims.insert(axis if axis >= 0 else len(dims) + axis + 1, 1)
                return replace_val(x, shape=tuple(dims))
            return x
        if leaf in ("broadcast_to",):
            x = self.expr(arg(0, "input"))
            shape_val = self.expr(node.args[1]) if len(node.args) > 1 else Val()
            if shape_val.items is not None:
                return replace_val(
                    x, shape=tuple(i.const if isinstance(i.const, int) else None for i in shape_val.items)
                )
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
        if leaf in DESCRIPTOR_CALLS:
            self.uses_descriptors = True
            for a in node.args:
                self.expr(a)
            return Val()
        if leaf in ("div_rn", "fdiv"):
            vals = [self.expr(a) for a in node.args]
            rn = leaf == "div_rn" or literal(kw_nodes.get("ieee_rounding")) is True
            if rn and vals and not any(v.is_tensor for v in vals):
                self.emit("scalar_div_rn", node, None, None, f"tl.{fn} on scalar operands")
            return Val(shape=broadcast(*(v.shape for v in vals)), dtype="fp32")
        # generic elementwise / unknown tl function: broadcast the tensor arguments
        vals = [self.expr(a) for a in node.args]
        for v in kw_nodes.values():
            self.expr(v)
        if leaf == "cdiv" and len(vals) == 2 and all(isinstance(v.const, int) for v in vals) and vals[1].const:
            return const_val(-(-vals[0].const // vals[1].const))
        if leaf in ("minimum", "maximum") and len(vals) == 2 and all(isinstance(v.const, (int, float)) for v in vals):
            pair = (vals[0].const, vals[1].const)
            return const_val(min(pair) if leaf == "minimum" else max(pair))
        tensors = [v for v in vals if v.is_tensor or v.ptr]
        if not tensors and not vals:
            return Val()
        base = tensors[0] if tensors else vals[0]
        shape = broadcast(*(v.shape for v in vals))
        dtype = base.dtype
        if leaf in ("multiple_of", "max_contiguous", "max_constancy"):
            return base
        for v in vals[1:]:
            dtype = promote(Val(dtype=dtype, shape=shape), v) if v.is_tensor else dtype
        if leaf in ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "sigmoid", "erf", "tanh") and (
            dtype not in FLOATS
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
            return replace_val(x, const=UNKNOWN, from_dot=False)
        return replace_val(x, dtype=dt, const=UNKNOWN, from_dot=False, int_cmp=False)

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
        sem = literal(kw.get("sem"))
        scope = literal(kw.get("scope"))
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
        if "max_num_imprecise_acc" in kw and literal(kw["max_num_imprecise_acc"]) not in (None, 0):
            self.emit("dot_options", node, "max_num_imprecise_acc", None, "tl.dot with max_num_imprecise_acc")
        prec = literal(kw.get("input_precision"))
        if isinstance(prec, str) and prec not in ("ieee", "hf32"):
            self.emit("dot_options", node, prec, "ieee|hf32", f"tl.dot with input_precision={prec!r}")
        if literal(kw.get("allow_tf32")) is True:
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
            sa, sb = DTYPE_BYTES.get(a.dtype or "fp16", 2), DTYPE_BYTES.get(b.dtype or "fp16", 2)
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
            last_bytes = int(shape[-1]) * DTYPE_BYTES.get(dt, 4)
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
