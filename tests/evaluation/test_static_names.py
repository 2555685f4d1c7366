"""Global names the candidate reads (evaluation/static_names.py): defined, imported or builtin only.

Triton's interpreter copies its own globals (NumPy as ``np``, its native module, its builder and
semantic) into the module of every kernel it rewrites, so a name the module never binds can reach
interpreter internals at run time.
"""

from __future__ import annotations

import ast

import pytest

from ascend_kernel_gym.evaluation import ErrorType, check_source
from ascend_kernel_gym.evaluation.sandbox_rules import INTERPRETER_GLOBAL_NAMES
from ascend_kernel_gym.evaluation.static_names import name_problems


def _names(code: str) -> list[tuple[str, int]]:
    return [(p.name, p.line) for p in name_problems(ast.parse(code))]


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        # read inside a kernel, in host code, in a default, a decorator, a comprehension's first iterable
        ("import triton\n@triton.jit\ndef k(x):\n    y = interpreter_builder\n", [("interpreter_builder", 4)]),
        ("def f():\n    return np.zeros(3)\n", [("np", 2)]),
        ("f = lambda a, b=c: a\n", [("c", 1)]),
        ("@undefined_decorator\ndef f():\n    pass\n", [("undefined_decorator", 1)]),
        ("def f():\n    return sum(x for x in undefined_iter)\n", [("undefined_iter", 2)]),
        # a `global` declaration alone binds nothing; assigned in a function, it binds the module's name
        ("def g():\n    global X\ndef f():\n    return X\n", [("X", 4)]),
        ("def g():\n    global X\n    X = 1\ndef f():\n    return X\n", []),
        # `del` binds nothing
        ("def f():\n    return Z\ndel Z\n", [("Z", 2)]),
        # class bodies are not enclosing scopes of their methods and comprehensions
        ("class A:\n    B = 1\n    def m(self):\n        return B\n", [("B", 4)]),
        ("class A:\n    B = 1\n    C = [B for _ in range(2)]\n", [("B", 3)]),
        ("class A:\n    B = 1\n    C = B + 1\n", []),
        ("def f():\n    a = 1\n    class C:\n        b = a\n    return C\n", []),
        # function scopes, closures, nonlocal, comprehension targets, assignment expressions
        ("def f(n):\n    np = n * 2\n    return np\n", []),
        ("def f():\n    a = 1\n    def g():\n        return a\n    return g\n", []),
        ("def f():\n    a = 1\n    def g():\n        nonlocal a\n        a = 2\n    return g\n", []),
        ("def f(xs):\n    return [x * y for x in xs for y in xs if x]\n", []),
        ("def f(xs):\n    r = [(z := x) for x in xs]\n    return z\n", []),
        ("r = [(z := x) for x in range(3)]\nprint(z)\n", []),
        ("d = {k: v for k, v in [(1, 2)]}\n", []),
        # loop, with and except targets, imports, builtins, module dunders
        ("for i in range(3):\n    pass\nprint(i)\n", []),
        ("try:\n    import foo\nexcept ImportError as e:\n    foo = None\nprint(foo, len([]))\n", []),
        ("import triton.language as tl\nprint(tl, __name__, __file__)\n", []),
        # annotations: evaluated unless `from __future__ import annotations`; never in a function body
        ("def f(x: Tensor) -> Tensor:\n    return x\n", [("Tensor", 1)]),
        ("from __future__ import annotations\ndef f(x: Tensor) -> Tensor:\n    y: Other = x\n    return y\n", []),
        ("x: int\nprint(x)\n", [("x", 2)]),
        # never-run `__main__` blocks are skipped (their bindings too)
        ("if __name__ == '__main__':\n    print(undefined_thing)\n", []),
        ("if __name__ == '__main__':\n    q = 1\ndef f():\n    return q\n", [("q", 4)]),
        # interpreter names: refused as globals, bound or not, read or written; fine as locals
        (
            "if False:\n    interpreter_semantic = 1\ndef f():\n    return interpreter_semantic\n",
            [("interpreter_semantic", 2)],
        ),
        ("time = 3\n", [("time", 1)]),
        ("def f():\n    global _interpreter\n", [("_interpreter", 2)]),
        ("def f():\n    time = 3\n    return time\n", []),
    ],
)
def test_global_names_must_be_bound(code: str, expected: list[tuple[str, int]]) -> None:
    assert _names(code) == expected


def test_each_name_is_reported_once() -> None:
    assert _names("def f():\n    return np\ndef g():\n    return np, np\n") == [("np", 2)]


def test_interpreter_names_are_refused_in_a_full_candidate() -> None:
    code = (
        "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n\n"
        "@triton.jit\ndef k(x_ptr, n, B: tl.constexpr):\n    o = tl.arange(0, B)\n"
        "    s = interpreter_semantic\n    tl.store(x_ptr + o, tl.load(x_ptr + o, mask=o < n), mask=o < n)\n\n"
        "class ModelNew(nn.Module):\n    def forward(self, x):\n"
        "        k[(1,)](x, x.numel(), B=1024)\n        return x\n"
    )
    report = check_source(code)
    assert report.error_type == ErrorType.FORBIDDEN
    assert report.violations[0].line == 9 and "`interpreter_semantic` is reserved" in report.violations[0].message


def test_the_names_triton_injects_are_covered() -> None:
    """Every global of this Triton's interpreter module that is not an ordinary library name is reserved."""
    interpreter = pytest.importorskip("triton.runtime.interpreter")
    ordinary = {"math", "triton", "tl", "dataclass", "dataclasses", "partial", "annotations", "TensorDescriptor"}
    ordinary |= {"Callable", "Dict", "List", "Optional", "Tuple", "TypeVar", "T"}
    injected = {name for name in vars(interpreter) if not name.startswith("__")}
    assert injected - ordinary <= INTERPRETER_GLOBAL_NAMES, sorted(injected - ordinary - INTERPRETER_GLOBAL_NAMES)


def test_a_reserved_name_that_is_only_bound_is_refused_without_being_a_hack() -> None:
    """Issue 22: ``import numpy as np`` never read binds ``np`` (refused) but reaches nothing."""
    [bound] = name_problems(ast.parse("import numpy as np\n"))
    assert bound.name == "np" and not bound.hack
    [assigned] = name_problems(ast.parse("np = 3\n"))
    assert not assigned.hack
    [read] = name_problems(ast.parse("import numpy as np\ndef f():\n    return np.zeros(3)\n"))
    assert read.hack and read.line == 1
    [unbound] = name_problems(ast.parse("def f():\n    return np\n"))
    assert unbound.hack
    # a local ``np`` read does not make the global binding read
    [local] = name_problems(ast.parse("np = 1\ndef f(np):\n    return np\n"))
    assert not local.hack


_FALLBACK_IMPORT = """
import torch
import torch.nn as nn
import triton
import triton.language as tl

try:
    from triton.language.extra.cuda import libdevice
except ImportError:
    from triton.language.extra import libdevice


@triton.jit
def gelu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, 0.5 * x * (1.0 + libdevice.erf(x * 0.7071067811865476)), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        gelu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        return out
"""


def test_a_fallback_import_for_another_triton_version_passes() -> None:
    report = check_source(_FALLBACK_IMPORT)
    assert report.ok, report.message()
    # the use is checked under both imports
    assert {"triton.language.extra.cuda.libdevice.erf", "triton.language.extra.libdevice.erf"} <= report.paths


@pytest.mark.parametrize(
    "use",
    [
        "return out, getattr(libdevice, 'erf')",  # passed around as a value: which module is it?
        "helper = libdevice\n        return out",
    ],
)
def test_a_name_imported_as_two_things_may_only_be_used_as_module_attributes(use: str) -> None:
    report = check_source(_FALLBACK_IMPORT.replace("return out", use))
    assert not report.ok and "`libdevice` is imported as 2 different things" in report.message()


def test_a_use_is_refused_when_either_import_makes_it_forbidden() -> None:
    # the resolver follows the last import; every other one is checked too
    code = _FALLBACK_IMPORT.replace(
        "from triton.language.extra.cuda import libdevice", "import triton.language.extra.cuda.libdevice as libdevice"
    )
    assert check_source(code).ok
    code = code.replace("libdevice.erf(", "libdevice.str_to_ty(")  # forbidden under triton.language only
    code = code.replace(
        "import triton.language.extra.cuda.libdevice as libdevice", "import triton.language as libdevice"
    )
    report = check_source(code)
    assert not report.ok and "`triton.language.str_to_ty` is forbidden" in report.message()


def test_a_name_imported_from_torch_and_from_triton_is_refused() -> None:
    # the kernel checks follow one import: torch's functions in a kernel would pass as Triton's
    code = _FALLBACK_IMPORT.replace("from triton.language.extra.cuda import libdevice", "import torch as libdevice")
    report = check_source(code)
    assert not report.ok and "`libdevice` is imported as 2 different things" in report.message()
