"""How many elements a task file's inputs and parameters have, read from its AST.

The estimate follows what ``get_inputs()`` and ``Model(*get_init_inputs())`` would build: tensor
factories (``torch.randn(batch_size, dim)``, ``torch.randint(0, 10, (n,))``, ...) count their
shape; layers of ``torch.nn`` with parameters (``nn.Linear``, ``nn.Conv2d``, norms, embeddings,
recurrent layers, attention) count their weights; classes and functions defined in the file are
followed with their arguments bound; ``for`` loops and comprehensions over ``range(n)`` multiply.
Nothing is executed. What cannot be evaluated is listed in :attr:`SizeEstimate.unknown` (the
exact count is one subprocess away: :mod:`ascend_kernel_gym.tasks.measure`).

It also finds the sizes a profile may set besides module constants: integer literals in shape
positions inside ``get_inputs`` / ``get_init_inputs``, in keyword arguments there, in the list
``get_init_inputs`` returns and in the defaults of ``Model.__init__`` (see
:func:`~ascend_kernel_gym.tasks.constants.literal_key`).
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass, field
from typing import Any

from ascend_kernel_gym.tasks.constants import NotConstantError, literal_key
from ascend_kernel_gym.tasks.layers import LAYER_PARAMETERS

#: torch factories whose positional integers (or first tuple) are the shape.
_SHAPE_FACTORIES = frozenset({"randn", "rand", "zeros", "ones", "empty"})
#: Keyword arguments that carry no size (never shrunk when written as literals).
_NOT_SIZE_KEYWORDS = frozenset(
    {"dim", "axis", "dtype", "device", "low", "high", "mean", "std", "generator", "requires_grad", "keepdim",
     "kernel_size", "stride", "padding", "dilation", "groups", "num_heads", "nhead", "heads", "num_groups",
     "num_layers", "seed", "p", "eps", "momentum", "bias", "output_padding", "ignore_index", "value"}
)  # fmt: skip
_MAX_DEPTH = 6
_UNKNOWN = object()
_MAX_LOOP = 10_000
_MAX_UNROLL = 64


class _Tensor:
    """A tensor the walker built: only its shape is known."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = shape


@dataclass
class SizeEstimate:
    """Elements of a task's inputs and parameters at one set of sizes."""

    inputs: int = 0
    parameters: int = 0
    #: what could not be evaluated (``"get_inputs line 12: torch.randn(...)"``)
    unknown: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return self.inputs + self.parameters

    @property
    def complete(self) -> bool:
        return not self.unknown


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return "?"


class SizeModel:
    """The parts of a task file that make its inputs and parameters, ready to estimate."""

    def __init__(self, tree: ast.Module) -> None:
        self.functions: dict[str, ast.FunctionDef] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                self.functions[node.name] = node
            elif isinstance(node, ast.ClassDef):
                self.classes[node.name] = node
        self.sites: dict[str, tuple[int, str]] = {}  # literal key -> (value, keyword or "")
        self._find_sites()

    # --- literal sizes a profile may set ------------------------------------------------------

    def _add_site(self, scope: str, node: ast.expr, keyword: str = "") -> None:
        if isinstance(node, ast.Constant) and type(node.value) is int and node.value >= 2:
            self.sites[literal_key(scope, node)] = (node.value, keyword)
        elif isinstance(node, (ast.Tuple, ast.List)):
            for element in node.elts:
                self._add_site(scope, element, keyword)

    def _find_sites(self) -> None:
        for name in ("get_inputs", "get_init_inputs"):
            func = self.functions.get(name)
            if func is None:
                continue
            for node in ast.walk(func):
                if isinstance(node, ast.Call):
                    for position, arg in self._shape_args(node):
                        self._add_site(name, arg, position)
                    for keyword in node.keywords:
                        if keyword.arg and keyword.arg not in _NOT_SIZE_KEYWORDS:
                            self._add_site(name, keyword.value, keyword.arg)
                elif name == "get_init_inputs" and isinstance(node, ast.Return) and node.value is not None:
                    if isinstance(node.value, (ast.List, ast.Tuple)):
                        for element in node.value.elts:
                            self._add_site(name, element)
        init = self._init_of("Model")
        if init is not None:
            args = init.args
            positional = [*args.posonlyargs, *args.args]
            for arg, default in zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True):
                if arg.arg not in _NOT_SIZE_KEYWORDS:
                    self._add_site("Model.__init__", default, arg.arg)
            for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
                if default is not None and arg.arg not in _NOT_SIZE_KEYWORDS:
                    self._add_site("Model.__init__", default, arg.arg)

    @staticmethod
    def _shape_args(call: ast.Call) -> list[tuple[str, ast.expr]]:
        """The arguments of a torch factory call that hold its shape."""
        func = call.func
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "torch"):
            return []
        name = func.attr
        shape = [("size", k.value) for k in call.keywords if k.arg == "size"]
        if name in _SHAPE_FACTORIES:
            return shape + [("", a) for a in call.args if not isinstance(a, ast.Starred)]
        if name in ("randint", "full", "normal") and not shape:
            tuples = [a for a in call.args if isinstance(a, (ast.Tuple, ast.List))]
            return [("size", tuples[-1])] if tuples else []
        return shape

    def _init_of(self, class_name: str) -> ast.FunctionDef | None:
        cls = self.classes.get(class_name)
        if cls is None:
            return None
        for node in cls.body:
            if isinstance(node, ast.FunctionDef) and node.name == "__init__":
                return node
        return None

    # --- the estimate ---------------------------------------------------------------------------

    def estimate(self, constants: dict[str, Any], literals: dict[str, Any] | None = None) -> SizeEstimate:
        """Elements of the inputs and parameters with these module constants and literal sizes."""
        walker = _Walker(self, constants, literals or {})
        result = SizeEstimate()
        if "get_inputs" in self.functions:
            result.inputs = walker.run_function("get_inputs", [], {})[0]
        params: list[Any] | None = None
        init_func = self.functions.get("get_init_inputs")
        if init_func is not None:
            result.parameters, params = walker.run_function("get_init_inputs", [], {}, want_return=True)
        if isinstance(params, (list, tuple)):
            result.parameters += walker.construct("Model", list(params), {})
        elif init_func is not None:
            walker.unknown.append("get_init_inputs(): its return value cannot be read from the source")
        result.unknown = walker.unknown
        return result


class _Walker:
    """Walks function bodies with known values, counting the elements the calls make."""

    def __init__(self, model: SizeModel, constants: dict[str, Any], literals: dict[str, Any]) -> None:
        self.model = model
        self.constants = constants
        self.literals: dict[tuple[int, int], Any] = {}
        for key, value in literals.items():
            scope, _, where = key.rpartition("@")
            line, _, col = where.partition(":")
            if scope and line.isdigit() and col.isdigit():
                self.literals[(int(line), int(col))] = value
        self.unknown: list[str] = []
        self.depth = 0

    # values

    def value(self, node: ast.expr, env: dict[str, Any]) -> Any:
        if isinstance(node, ast.Constant):
            return self.literals.get((node.lineno, node.col_offset), node.value)
        if isinstance(node, ast.Name):
            if node.id in env:
                return env[node.id]
            if node.id in self.constants:
                return self.constants[node.id]
            raise NotConstantError(node.id)
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id == "self" and f"self.{node.attr}" in env:
                return env[f"self.{node.attr}"]
            base = self.value(node.value, env)
            if isinstance(base, _Tensor) and node.attr == "shape":
                return base.shape
            raise NotConstantError(node.attr)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            operand = self.value(node.operand, env)
            if not isinstance(operand, (int, float)):
                raise NotConstantError("unary")
            return -operand if isinstance(node.op, ast.USub) else operand
        if isinstance(node, ast.BinOp):
            left, right = self.value(node.left, env), self.value(node.right, env)
            return _binary(node.op, left, right)
        if isinstance(node, (ast.Tuple, ast.List)):
            items: list[Any] = []
            for element in node.elts:
                if isinstance(element, ast.Starred):
                    inner = self.value(element.value, env)
                    if not isinstance(inner, (tuple, list)):
                        raise NotConstantError("starred")
                    items.extend(inner)
                else:
                    items.append(self.value(element, env))
            return tuple(items) if isinstance(node, ast.Tuple) else items
        if isinstance(node, ast.Subscript):
            base = self.value(node.value, env)
            index = self.value(node.slice, env)
            if isinstance(base, (tuple, list)) and isinstance(index, int) and -len(base) <= index < len(base):
                return base[index]
            raise NotConstantError("subscript")
        if isinstance(node, ast.Call):
            return self.call_value(node, env)
        raise NotConstantError(type(node).__name__)

    def call_value(self, node: ast.Call, env: dict[str, Any]) -> Any:
        name = _dotted(node.func)
        if name in ("int", "max", "min", "len", "tuple", "list", "round", "abs"):
            args = [self.value(a, env) for a in node.args]
            if name == "int" and len(args) == 1 and isinstance(args[0], (int, float)):
                return int(args[0])
            if name in ("max", "min") and args and all(isinstance(a, (int, float)) for a in args):
                return max(args) if name == "max" else min(args)
            if name == "len" and len(args) == 1 and isinstance(args[0], (tuple, list)):
                return len(args[0])
            if name in ("tuple", "list") and len(args) == 1 and isinstance(args[0], (tuple, list)):
                return tuple(args[0]) if name == "tuple" else list(args[0])
            raise NotConstantError(name)
        shape = self.factory_shape(node, env)
        if shape is not None:
            return _Tensor(shape)
        raise NotConstantError(name)

    def factory_shape(self, call: ast.Call, env: dict[str, Any]) -> tuple[int, ...] | None:
        """The shape a torch factory call makes, ``None`` when it is not one; raises when it is one
        whose shape cannot be evaluated."""
        func = call.func
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "torch"):
            if isinstance(func, ast.Attribute) and func.attr in ("expand", "repeat", "view", "reshape"):
                return None
            return None
        name = func.attr
        size = next((k.value for k in call.keywords if k.arg == "size"), None)
        if name in _SHAPE_FACTORIES:
            if size is not None:
                return _shape_of(self.value(size, env))
            values: list[Any] = []
            for arg in call.args:
                if isinstance(arg, ast.Starred):
                    values.extend(self.value(arg.value, env))
                else:
                    values.append(self.value(arg, env))
            if len(values) == 1 and isinstance(values[0], (tuple, list)):
                return _shape_of(values[0])
            return _shape_of(tuple(values))
        if name in ("randint", "full", "normal"):
            if size is None:
                tuples = [a for a in call.args if isinstance(a, (ast.Tuple, ast.List, ast.Name, ast.BinOp))]
                candidates = [self.value(a, env) for a in tuples]
                shapes = [c for c in candidates if isinstance(c, (tuple, list))]
                if not shapes:
                    raise NotConstantError(name)
                return _shape_of(shapes[-1])
            return _shape_of(self.value(size, env))
        if name in ("arange",):
            args = [self.value(a, env) for a in call.args]
            if len(args) == 1:
                return (max(math.ceil(args[0]), 0),)
            step = args[2] if len(args) > 2 else 1
            return (max(math.ceil((args[1] - args[0]) / step), 0),)
        if name == "linspace":
            steps = (
                call.args[2] if len(call.args) > 2 else next((k.value for k in call.keywords if k.arg == "steps"), None)
            )
            return (int(self.value(steps, env)),) if steps is not None else None
        if name == "eye":
            args = [self.value(a, env) for a in call.args]
            return (args[0], args[1] if len(args) > 1 else args[0])
        if name in ("randn_like", "rand_like", "zeros_like", "ones_like", "empty_like", "full_like", "randint_like"):
            base = self.value(call.args[0], env) if call.args else None
            if isinstance(base, _Tensor):
                return base.shape
            raise NotConstantError(name)
        return None

    # counting

    def run_function(
        self, name: str, args: list[Any], kwargs: dict[str, Any], want_return: bool = False
    ) -> tuple[int, Any]:
        func = self.model.functions[name]
        env = self.bind(func, name, args, kwargs, skip_self=False)
        return self.run_body(func.body, env, name, want_return)

    def bind(self, func: ast.FunctionDef, scope: str, args: list[Any], kwargs: dict[str, Any], skip_self: bool) -> dict:
        params = [*func.args.posonlyargs, *func.args.args]
        if skip_self:
            params = params[1:]
        env: dict[str, Any] = {}
        defaults = func.args.defaults
        first_default = len([*func.args.posonlyargs, *func.args.args]) - len(defaults)
        all_params = [*func.args.posonlyargs, *func.args.args]
        for index, param in enumerate(all_params):
            if index >= first_default:
                try:
                    env[param.arg] = self.value(defaults[index - first_default], env)
                except NotConstantError:
                    pass
        for param, default in zip(func.args.kwonlyargs, func.args.kw_defaults, strict=True):
            if default is not None:
                try:
                    env[param.arg] = self.value(default, env)
                except NotConstantError:
                    pass
        for param, value in zip(params, args, strict=False):
            if value is not _UNKNOWN:
                env[param.arg] = value
        rest = args[len(params) :]
        if func.args.vararg is not None and _UNKNOWN not in rest:
            env[func.args.vararg.arg] = tuple(rest)
        for key, value in kwargs.items():
            if value is not _UNKNOWN:
                env[key] = value
        return env

    def construct(self, class_name: str, args: list[Any], kwargs: dict[str, Any]) -> int:
        init = self.model._init_of(class_name)
        if init is None or self.depth >= _MAX_DEPTH:
            return 0
        self.depth += 1
        try:
            env = self.bind(init, f"{class_name}.__init__", args, kwargs, skip_self=True)
            return self.run_body(init.body, env, f"{class_name}.__init__", False)[0]
        finally:
            self.depth -= 1

    def run_body(self, body: list[ast.stmt], env: dict[str, Any], scope: str, want_return: bool) -> tuple[int, Any]:
        count = 0
        returned: Any = None
        for stmt in body:
            if isinstance(stmt, ast.Return):
                if stmt.value is not None:
                    count += self.count(stmt.value, env, scope)
                    if want_return:
                        try:
                            returned = self.value(stmt.value, env)
                        except (NotConstantError, ArithmeticError, TypeError, ValueError, IndexError):
                            returned = None
                return count, returned
            if isinstance(stmt, ast.Assign):
                count += self.count(stmt.value, env, scope)
                self.assign(stmt.targets, stmt.value, env)
            elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
                count += self.count(stmt.value, env, scope)
                self.assign([stmt.target], stmt.value, env)
            elif isinstance(stmt, ast.For):
                items = self.items(stmt.iter, env)
                if items is not None and isinstance(stmt.target, ast.Name):
                    for item in items:  # bound one by one: sizes that change along the loop
                        env[stmt.target.id] = item
                        count += self.run_body(stmt.body, env, scope, False)[0]
                else:
                    times = self.iterations(stmt.iter, env, scope)
                    inner, _ = self.run_body(stmt.body, dict(env), scope, False)
                    count += inner * times
            elif isinstance(stmt, (ast.If, ast.With, ast.Try)):
                inner, _ = self.run_body(getattr(stmt, "body", []), env, scope, False)
                count += inner
            elif isinstance(stmt, ast.Expr):
                count += self.count(stmt.value, env, scope)
            elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
                env.pop(stmt.target.id, None)
        return count, returned

    def assign(self, targets: list[ast.expr], value: ast.expr, env: dict[str, Any]) -> None:
        try:
            result = self.value(value, env)
        except (NotConstantError, ArithmeticError, TypeError, ValueError, IndexError, KeyError):
            result = None
        for target in targets:
            if isinstance(target, ast.Name):
                if result is None:
                    env.pop(target.id, None)
                else:
                    env[target.id] = result
            elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                if result is not None:
                    env[f"self.{target.attr}"] = result
            elif isinstance(target, (ast.Tuple, ast.List)):
                names = [t.id for t in target.elts if isinstance(t, ast.Name)]
                if isinstance(result, (tuple, list)) and len(result) == len(target.elts) == len(names):
                    env.update(zip(names, result, strict=True))
                else:
                    for name in names:
                        env.pop(name, None)

    def items(self, node: ast.expr, env: dict[str, Any]) -> list[Any] | None:
        """The values a loop runs over, when known and few (``range(6)``, a list constant)."""
        try:
            if isinstance(node, ast.Call) and _dotted(node.func) == "range":
                values: Any = range(*[self.value(a, env) for a in node.args])
            else:
                values = self.value(node, env)
        except (NotConstantError, ArithmeticError, TypeError, ValueError, IndexError, KeyError):
            return None
        if isinstance(values, (range, tuple, list)) and len(values) <= _MAX_UNROLL:
            return list(values)
        return None

    def iterations(self, node: ast.expr, env: dict[str, Any], scope: str) -> int:
        if isinstance(node, (ast.Tuple, ast.List)) and not any(isinstance(e, ast.Starred) for e in node.elts):
            return len(node.elts)
        if isinstance(node, ast.Call) and _dotted(node.func) == "range":
            try:
                args = [self.value(a, env) for a in node.args]
                return max(0, min(len(range(*args)), _MAX_LOOP))
            except (NotConstantError, TypeError, ValueError):
                pass
        try:
            value = self.value(node, env)
            if isinstance(value, (tuple, list)):
                return len(value)
        except (NotConstantError, ArithmeticError, TypeError, ValueError, IndexError):
            pass
        self.unknown.append(f"{scope} line {node.lineno}: a loop whose length cannot be read")
        return 1

    def count(self, node: ast.expr, env: dict[str, Any], scope: str) -> int:
        """Elements made by the calls inside expression ``node``."""
        if isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            first = node.generators[0]
            items = self.items(first.iter, env) if len(node.generators) == 1 else None
            if items is not None and isinstance(first.target, ast.Name) and not first.ifs:
                total = 0
                for item in items:
                    total += self.count(node.elt, {**env, first.target.id: item}, scope)
                return total
            times = 1
            for generator in node.generators:
                times *= self.iterations(generator.iter, env, scope)
            return times * self.count(node.elt, dict(env), scope)
        if isinstance(node, ast.Lambda):
            return 0
        total = 0
        if isinstance(node, ast.Call):
            total += self.call_elements(node, env, scope)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                total += self.count(child, env, scope)
        return total

    def call_elements(self, call: ast.Call, env: dict[str, Any], scope: str) -> int:
        name = _dotted(call.func)
        try:
            shape = self.factory_shape(call, env)
            if shape is not None:
                return math.prod(shape)
            short = name.rsplit(".", 1)[-1]
            if short in ("sample", "rsample") and isinstance(call.func, ast.Attribute) and call.args:
                return math.prod(_shape_of(self.value(call.args[0], env)))  # torch.distributions
            if name.startswith(("nn.", "torch.nn.")) and short in LAYER_PARAMETERS:
                args, kwargs = self.arguments(call, env)
                kwargs = {k: v for k, v in kwargs.items() if v is not _UNKNOWN}  # dtype=..., device=...
                return LAYER_PARAMETERS[short](args, kwargs)
            if name in self.model.classes:
                args, kwargs = self.arguments(call, env)
                return self.construct(name, args, kwargs)
            if name in self.model.functions and self.depth < _MAX_DEPTH:
                args, kwargs = self.arguments(call, env)
                self.depth += 1
                try:
                    return self.run_function(name, args, kwargs)[0]
                finally:
                    self.depth -= 1
        except (NotConstantError, ArithmeticError, TypeError, ValueError, IndexError, KeyError):
            self.unknown.append(f"{scope} line {call.lineno}: {name}(...) with sizes that cannot be read")
        return 0

    def arguments(self, call: ast.Call, env: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        """The call's arguments; one that cannot be evaluated is ``_UNKNOWN`` (left unbound)."""
        args: list[Any] = []
        for arg in call.args:
            if isinstance(arg, ast.Starred):
                args.extend(self.value(arg.value, env))
            else:
                args.append(self.maybe(arg, env))
        kwargs = {k.arg: self.maybe(k.value, env) for k in call.keywords if k.arg}
        return args, kwargs

    def maybe(self, node: ast.expr, env: dict[str, Any]) -> Any:
        try:
            return self.value(node, env)
        except (NotConstantError, ArithmeticError, TypeError, ValueError, IndexError, KeyError):
            return _UNKNOWN


def _binary(op: ast.operator, left: Any, right: Any) -> Any:
    if isinstance(op, ast.Add) and isinstance(left, (tuple, list)) and type(left) is type(right):
        return left + right
    if isinstance(op, ast.Mult) and isinstance(left, (tuple, list)) and isinstance(right, int) and right < 64:
        return left * right
    if not (isinstance(left, (int, float)) and isinstance(right, (int, float))):
        raise NotConstantError("operands")
    if isinstance(op, ast.Pow) and isinstance(right, int) and abs(right) > 64:
        raise NotConstantError("power")
    ops = {
        ast.Add: lambda a, b: a + b,
        ast.Sub: lambda a, b: a - b,
        ast.Mult: lambda a, b: a * b,
        ast.Div: lambda a, b: a / b,
        ast.FloorDiv: lambda a, b: a // b,
        ast.Mod: lambda a, b: a % b,
        ast.Pow: lambda a, b: a**b,
    }
    if type(op) not in ops:
        raise NotConstantError("operator")
    try:
        return ops[type(op)](left, right)
    except (ArithmeticError, ValueError) as exc:
        raise NotConstantError(str(exc)) from None


def _shape_of(value: Any) -> tuple[int, ...]:
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,)
    if isinstance(value, (tuple, list)) and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return tuple(max(v, 0) for v in value)
    raise NotConstantError("shape")
