"""The static stage: AST checks with alias resolution, one message per violation."""

from __future__ import annotations

import pytest

from ascend_kernel_gym.evaluation import ErrorType, check_source

KERNEL = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, n, B: tl.constexpr):
    o = tl.arange(0, B)
    tl.store(x_ptr + o, tl.load(x_ptr + o, mask=o < n), mask=o < n)


class ModelNew(nn.Module):
    def forward(self, x):
        k[(1,)](x, x.numel(), B=1024)
        return x
"""


def _errors(code: str) -> list[str]:
    return [v.message for v in check_source(code).violations]


def test_clean_kernel_passes() -> None:
    report = check_source(KERNEL)
    assert report.ok, report.message()
    assert report.kernels == ["k"]


@pytest.mark.parametrize(
    "decorator,imports",
    [
        ("@triton.jit", ""),
        ("@jit", "from triton import jit\n"),
        ("@tj", "from triton import jit as tj\n"),
        ("@triton.autotune(configs=[triton.Config({'B': 64})], key=['n'])\n@triton.jit", ""),
        ("@triton.jit(do_not_specialize=['n'])", ""),
    ],
)
def test_kernel_decorators_are_recognised(decorator: str, imports: str) -> None:
    code = imports + KERNEL.replace("@triton.jit", decorator)
    report = check_source(code)
    assert report.ok, report.message()
    assert "k" in report.kernels


@pytest.mark.parametrize(
    "snippet,needle",
    [
        ("import os", "module `os` is forbidden"),
        ("import numpy as np", "module `numpy` is forbidden"),
        ("from subprocess import run", "module `subprocess` is forbidden"),
        ("import importlib", "module `importlib` is forbidden"),
        ("import ctypes", "module `ctypes` is forbidden"),
        ("import ascend_kernel_gym", "module `ascend_kernel_gym` is forbidden"),
        ("f = torch.compile", "`torch.compile` is forbidden"),
        ("from torch import compile as c", "`torch.compile` is forbidden"),
        ("t = torch\nf = t.compile", "`torch.compile` is forbidden"),
        ("g = getattr(torch, 'compile')", "`torch.compile` is forbidden"),
        ("g = getattr(torch, 'com' + 'pile')", "computed attribute name"),
        ("h = __import__('os')", "`__import__` is forbidden"),
        ("e = eval('1')", "`eval` is forbidden"),
        ("o = open('/tmp/x', 'w')", "`open` is forbidden"),
        ("import functools\nr = functools.reduce(getattr, ['a'], torch)", "may only be called directly"),
        ("torch.allclose = None", "monkeypatching"),
        ("setattr(torch, 'allclose', None)", "monkeypatching"),
        ("x = torch.utils.cpp_extension", "torch.utils"),
        ("x = torch.cuda.CUDAGraph()", "graph capture"),
        ("x = torch.nn.modules.module.sys", "forbidden module `sys`"),
        ("x = torch._C", "private API"),
        ("x = triton.runtime.interpreter", "triton.runtime"),
        ("x = (lambda: 0).__globals__", "`__globals__` is forbidden"),
        ("import operator\nx = operator.attrgetter('compile')", "dynamic attribute access"),
        ("from . import thing", "relative imports"),
        ("from torch import *", "import *"),
        ("g = __builtins__['getattr']", "`__builtins__` is forbidden"),
        ("_t = [torch][0]", "the module `torch` is used as a value"),
        ("def install(m=torch):\n    pass", "the module `torch` is used as a value"),
        ("match torch:\n    case object(sys=s):\n        pass", "`match` statements are forbidden"),
        ("r = triton.language.extra.pkgutil.resolve_name", "pkgutil"),
        ("h = nn.functional.np", "forbidden module `np`"),
        ("def f(x):\n    return x.sys", "`.sys` is forbidden"),
        ("def f(x):\n    return getattr(x, 'sys')", "'sys'"),
        ("g = torch.default_generator", "default_generator"),
        ("p = torch.from_file('/tmp/x', True, 4)", "from_file"),
        ("b = torch.frombuffer(bytearray(8), dtype=torch.uint8)", "`torch.frombuffer` is forbidden"),
        ("b = torch.asarray(bytearray(8))", "`torch.asarray` is forbidden"),
        ("from torch import from_dlpack", "`torch.from_dlpack` is forbidden"),
        ("def f(x):\n    return torch.from_dlpack(x)", "`torch.from_dlpack` is forbidden"),
        ("def f():\n    return interpreter_builder", "`interpreter_builder` is reserved"),
        ("def f(x):\n    return np.asarray(x)", "`np` is reserved"),
        ("def f():\n    return not_defined_anywhere", "`not_defined_anywhere` is read but your code never defines"),
        ("import typing\nh = typing.get_type_hints", "get_type_hints"),
        ("import functools\nd = functools.singledispatch", "singledispatch"),
        ("torch.manual_seed(42)", "drop the call: ModelNew receives the reference's parameters and buffers"),
        ("torch.cuda.manual_seed_all(0)", "the harness seeds every trial itself"),
    ],
)
def test_forbidden_constructs(snippet: str, needle: str) -> None:
    report = check_source(KERNEL + "\n" + snippet + "\n")
    assert report.error_type == ErrorType.FORBIDDEN
    assert any(needle in message for message in _errors(KERNEL + "\n" + snippet + "\n")), report.message()


def test_aliases_are_resolved_for_warnings() -> None:
    code = (
        KERNEL.replace("        return x", "        return q.functional.softmax(x, -1)")
        + "\nfrom torch import nn as q\n"
    )
    report = check_source(code)
    assert report.ok
    assert any("torch.nn.functional.softmax" in w for w in report.warnings)


def test_compute_in_forward_is_only_a_warning() -> None:
    code = KERNEL.replace("        return x", "        y = x @ x\n        return y.sum()")
    report = check_source(code)
    assert report.ok
    assert any("`@`" in w for w in report.warnings)
    assert any(".sum()" in w for w in report.warnings)


def test_try_except_rejected_but_import_fallback_allowed() -> None:
    body = KERNEL.replace(
        "        k[(1,)](x, x.numel(), B=1024)",
        "        try:\n            k[(1,)](x, x.numel(), B=1024)\n        except Exception:\n            return x",
    )
    assert any("try/except" in m for m in _errors(body))
    fallback = "try:\n    import triton.language.extra.libdevice as libdevice\nexcept ImportError:\n    pass\n" + KERNEL
    assert check_source(fallback).ok


def test_subclassing_model_and_tensor() -> None:
    assert any("subclasses the reference `Model`" in m for m in _errors(KERNEL + "\nclass M2(Model):\n    pass\n"))
    assert any("tensor subclasses" in m for m in _errors(KERNEL + "\nclass T(torch.Tensor):\n    pass\n"))
    assert any(
        "__torch_function__" in m
        for m in _errors(KERNEL + "\nclass T:\n    def __torch_function__(self):\n        pass\n")
    )


def test_torch_inside_kernel_rejected() -> None:
    code = KERNEL.replace("    o = tl.arange(0, B)", "    o = tl.arange(0, B)\n    torch.relu(x_ptr)")
    assert any("inside a @triton.jit kernel" in m for m in _errors(code))


def test_missing_pieces_and_priorities() -> None:
    assert check_source("").error_type == ErrorType.NO_CODE
    assert check_source("# just a comment\n").error_type == ErrorType.NO_CODE
    assert check_source("def f(:\n").error_type == ErrorType.SYNTAX
    no_model = KERNEL.replace("class ModelNew", "class Other")
    assert check_source(no_model).error_type == ErrorType.MISSING_MODEL_NEW
    no_kernel = "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
    assert check_source(no_kernel).error_type == ErrorType.NO_TRITON_KERNEL
    both = "import os\n" + no_kernel
    assert check_source(both).error_type == ErrorType.FORBIDDEN  # forbidden outranks missing pieces


def test_one_message_per_violation_with_line_numbers() -> None:
    code = KERNEL + "\nimport os\nimport socket\n"
    report = check_source(code)
    lines = report.message().splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("line ") and "os" in lines[0]
    assert "socket" in lines[1]


def test_never_raises_on_garbage() -> None:
    for junk in ["\x00\x01", "(" * 500, "class ModelNew(" * 50, "ModelNew = 3\n" * 1000, "🙂"]:
        report = check_source(junk)
        assert not report.ok


def test_imported_names_used_as_values_are_left_to_the_child() -> None:
    """`from x import y` may bind a module or a function; the child decides with the live object."""
    code = KERNEL + "\nfrom torch import nn as q\nfrom torch.nn.functional import relu\nthings = [q, relu]\n"
    report = check_source(code)
    assert report.ok, report.message()
    assert {"torch.nn", "torch.nn.functional.relu"} <= report.escaping


@pytest.mark.parametrize(
    "expression",
    [
        "[typing.collections][0]",
        "(typing.collections,)[0]",
        "typing.collections if len(KEEP) else None",
        "(lambda: typing.collections)()",
        "{0: typing.collections}[0]",
        "max([typing.collections], key=id)",
        "[getattr(typing, 'collections')][0]",
    ],
)
def test_dotted_paths_used_as_values_are_left_to_the_child(expression) -> None:
    # A module reached as an attribute and handed around escapes attribute resolution just as an
    # imported name does: the child refuses the path if the live object is a module.
    report = check_source(KERNEL + f"\nimport typing\nKEEP = [1]\nthing = {expression}\n")
    assert report.ok, report.message()
    assert "typing.collections" in report.escaping


def test_getattr_and_hasattr_with_a_literal_name_read_a_module_without_handing_it_around() -> None:
    code = KERNEL + "\nimport typing\nA = getattr(torch, 'float16')\nB = hasattr(torch.cuda, 'is_available')\n"
    report = check_source(code)
    assert report.ok, report.message()
    assert "torch" not in report.escaping and "torch.cuda" not in report.escaping


def test_private_attributes_are_refused_on_anything_but_self_and_cls() -> None:
    escape = KERNEL + "\nimport typing\nS = [typing.collections][0]._sys\n"
    assert any("`._sys`" in e and "private" in e for e in _errors(escape))
    assert any("`._foo`" in e for e in _errors(KERNEL + "\nX = [1][0]._foo\n"))
    assert any("`._x`" in e for e in _errors(KERNEL + "\ndef f(obj):\n    return obj._x\n"))
    own = KERNEL + (
        "\nclass A:\n    _z = 3\n\n    def f(self):\n        self._y = 1\n        return self._y + self._h()\n"
        "\n    def _h(self):\n        return (lambda: self._y)()\n"
        "\n    @classmethod\n    def g(cls):\n        return cls._z\n"
    )
    assert check_source(own).ok, check_source(own).message()
    # ``self`` is only a name: outside a method, or for a name the candidate never defines, it is refused.
    grab = KERNEL + "\nclass A:\n    _x = 1\n\n\ndef grab(self):\n    return self._x\n"
    assert any("`._x`" in e for e in _errors(grab))
    undefined = KERNEL + "\nclass A:\n    def f(self):\n        return self._sys\n"
    assert any("`._sys`" in e for e in _errors(undefined))
    named = (
        KERNEL + "\nimport collections\nP = collections.namedtuple('P', 'a b')\nQ = P(1, 2)._replace(a=3)._asdict()\n"
    )
    assert check_source(named).ok, check_source(named).message()


@pytest.mark.parametrize(
    "snippet",
    [
        "C = triton.Config({}, pre_hook=print)",
        "D = triton.autotune(configs=[], key=[], post_hook=print)",
        "E = triton.autotune(configs=[], key=[], do_bench=print)",
        "F = triton.autotune(configs=[], key=[], **{'post_hook': print})",
        "def f(tuner):\n    tuner.pre_hook = print",
        "G = getattr(k, 'do_bench', None)",
    ],
)
def test_autotune_hooks_are_refused(snippet) -> None:
    errors = _errors(KERNEL + "\n" + snippet + "\n")
    assert any("autotune" in e and ("hook" in e or "bench" in e) for e in errors), errors


def test_kernels_may_call_only_triton_functions() -> None:
    helper = KERNEL.replace("@triton.jit", "def helper(v):\n    return v\n\n\n@triton.jit", 1)
    calls = helper.replace("    o = tl.arange(0, B)", "    o = helper(tl.arange(0, B))")
    assert any("`helper`, which is plain Python" in e for e in _errors(calls))
    lam = KERNEL.replace("@triton.jit", "twice = lambda v: v * 2\n\n\n@triton.jit", 1)
    assert any(
        "`twice`" in e for e in _errors(lam.replace("    o = tl.arange(0, B)", "    o = twice(tl.arange(0, B))"))
    )
    passed = helper.replace("k[(1,)](x, x.numel(), B=1024)", "k[(1,)](x, x.numel(), B=1024, FN=helper)")
    assert any("passed to a kernel launch" in e for e in _errors(passed))
    jit_helper = KERNEL.replace("@triton.jit", "@triton.jit\ndef helper(v):\n    return v\n\n\n@triton.jit", 1)
    assert check_source(jit_helper.replace("    o = tl.arange(0, B)", "    o = helper(tl.arange(0, B))")).ok
    constexpr_fn = KERNEL.replace(
        "@triton.jit", "@triton.constexpr_function\ndef half(v):\n    return v // 2\n\n\n@triton.jit", 1
    )
    assert check_source(constexpr_fn.replace("tl.arange(0, B)", "tl.arange(0, half(B))")).ok
    handle = KERNEL.replace("    o = tl.arange(0, B)", "    o = tl.arange(0, B)\n    d = o.handle")
    assert any("`.handle`" in e for e in _errors(handle))


def test_main_guard_blocks_are_skipped_and_name_cannot_be_assigned() -> None:
    selftest = KERNEL + ('\nif __name__ == "__main__":\n    torch.manual_seed(0)\n    import os\nelse:\n    X = 1\n')
    assert check_source(selftest).ok, check_source(selftest).message()
    spoofed = '__name__ = "__main__"\n' + selftest
    assert any("assigning to `__name__`" in e for e in _errors(spoofed))
    assert check_source(KERNEL + '\n__all__ = ["ModelNew"]\n').ok


def test_host_side_tensor_descriptors_are_allowed_but_other_triton_tools_are_not() -> None:
    ok = KERNEL + "\nfrom triton.tools.tensor_descriptor import TensorDescriptor\n"
    assert check_source(ok).ok, check_source(ok).message()
    assert any("triton tools" in e for e in _errors(KERNEL + "\nimport triton.tools.disasm\n"))


def test_methods_and_rebound_names_are_not_plain_callables_in_launches() -> None:
    code = KERNEL.replace(
        "class ModelNew(nn.Module):\n    def forward(self, x):\n        k[(1,)](x, x.numel(), B=1024)",
        "class ModelNew(nn.Module):\n    @staticmethod\n    def block(n):\n        return 1024\n\n"
        "    def forward(self, x):\n        block = self.block(x.numel())\n        k[(1,)](x, x.numel(), B=block)",
    )
    assert "B=block" in code
    assert check_source(code).ok, check_source(code).message()


def test_a_module_alias_by_assignment_is_an_alias_only_when_bound_once_at_module_level() -> None:
    single = check_source(KERNEL + "\ntlm = tl.math\n")
    assert single.ok and "triton.language.math" not in single.escaping
    # Rebound where the checker cannot follow (a function never called): left to the live check.
    shadowed = (
        KERNEL + "\nimport typing\nC = typing.collections\n\n\ndef f():\n    global C\n    C = typing.NamedTuple\n"
    )
    assert "typing.collections" in check_source(shadowed).escaping
    in_class = KERNEL + "\nimport typing\n\n\nclass Box:\n    mod = typing.collections\n"
    assert "typing.collections" in check_source(in_class).escaping
    assert check_source(KERNEL + '\n__version__ = "0.1"\n').ok


# --- issue 21, point 4: tensor subclasses, metaclasses and class factories ----------------------
@pytest.mark.parametrize(
    ("snippet", "needle"),
    [
        ("class P(nn.Parameter):\n    pass", "tensor subclasses are forbidden"),
        ("from torch.nn import Parameter as Q\nclass P(Q):\n    pass", "tensor subclasses are forbidden"),
        ("from torch.nn.parameter import Buffer\nclass P(Buffer):\n    pass", "tensor subclasses are forbidden"),
        ("T = torch.Tensor\nclass P(T):\n    pass", "tensor subclasses are forbidden"),
        ("def f():\n    class P(torch.Tensor):\n        pass\n    return P", "tensor subclasses are forbidden"),
        ("class P(torch.masked.MaskedTensor):\n    pass", "only torch.nn modules"),
        ("bases = (torch.Tensor,)\nclass P(*bases):\n    pass", "bases unpacked from a sequence"),
        ("def f():\n    return torch.Tensor\nclass P(f()):\n    pass", "a base computed by a call"),
        ("class P([torch.Tensor][0]):\n    pass", "cannot tell which class it is"),
        ("class P(tl.constexpr):\n    pass", "classes from `triton` may not be subclassed"),
        ("class M(type):\n    pass", "metaclasses are forbidden"),
        ("import abc\nclass M(abc.ABCMeta):\n    pass", "metaclasses are forbidden"),
        ("P = type(torch.Tensor)('P', (torch.Tensor,), {})", "calling a class's metaclass"),
        ("M = type(torch.Tensor)", "passing or storing an object's class"),
        ("P = torch.Tensor.__class__('P', (torch.Tensor,), {})", "calling a class's metaclass"),
        ("P = type.__call__(type, 'P', (torch.Tensor,), {})", "calling a class's metaclass"),
        ("t = type\nP = t('P', (torch.Tensor,), {})", "passing or storing"),
        ("P = [type][0]('P', (torch.Tensor,), {})", "passing or storing"),
        ("P = getattr(torch.Tensor, '__class__')", "write `x.__class__`"),
        ("class A:\n    def again(self):\n        return self.__class__()", "calling a class's metaclass"),
        ("import abc\nP = abc.ABCMeta('P', (torch.Tensor,), {})", "calling the metaclass `abc.ABCMeta`"),
        ("import dataclasses\nP = dataclasses.make_dataclass('P', [], bases=(torch.Tensor,))", "make_dataclass"),
        ("import enum\nE = enum.Enum('E', 'a', type=torch.Tensor)", "functional Enum API"),
        ("class B:\n    def __mro_entries__(self, bases):\n        return (torch.Tensor,)", "`__mro_entries__`"),
        ("NS = {'__torch_function__': None}", "tensor subclasses and operator overrides"),
        ("NS = {'__torch_dispatch__': None}", "tensor subclasses and operator overrides"),
        ("def g(x):\n    return x.as_subclass(torch.Tensor)", "`.as_subclass` is forbidden"),
        ("def g(x):\n    return getattr(x, '_make_wrapper_subclass')", "tensor subclasses are forbidden"),
        ("def g(x):\n    return x._make_subclass", "tensor subclasses are forbidden"),
    ],
)
def test_tensor_subclasses_and_class_factories_are_refused(snippet: str, needle: str) -> None:
    report = check_source(KERNEL + "\n" + snippet + "\n")
    assert report.error_type == ErrorType.FORBIDDEN, snippet
    assert needle in report.message(), report.message()


@pytest.mark.parametrize(
    "snippet",
    [
        "class Helper:\n    def __init__(self):\n        self.block = 1024",
        "import typing\nclass Cfg(typing.NamedTuple):\n    block: int\n    warps: int",
        "import collections\nclass Cfg(collections.namedtuple('Cfg', 'block warps')):\n    pass",
        "import dataclasses\n@dataclasses.dataclass\nclass Cfg:\n    block: int = 1024",
        "class ShapeError(ValueError):\n    pass",
        "import enum\nclass Mode(enum.IntEnum):\n    A = 1",
        "import abc\nclass Base(abc.ABC):\n    pass",
        "import typing\nT = typing.TypeVar('T')\nclass Box(typing.Generic[T]):\n    pass",
        "class F(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n        return x",
        "class L(nn.Linear):\n    pass",
        "class Own(nn.Module):\n    pass\nclass Mine(Own):\n    pass\nAlias = Mine\nclass Leaf(Alias):\n    pass",
        "def same(x, y):\n    return isinstance(x, type(y)) and type(x) is type(y) and x.__class__.__name__ == 'T'",
        "def describe(x):\n    return f'{type(x)}: {type(x).__name__}'",
        "H = {int: 1}\ndef pick(x):\n    return H[type(x)]",
        "class M:\n    _cache = {}\n    def f(self):\n        return type(self)._cache",
        "def f(c: type) -> type:\n    return int",
        "class W(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.w = nn.Parameter(torch.zeros(3))",
        '"""Mentions __torch_function__ and as_subclass in a docstring."""',
    ],
)
def test_honest_classes_stay_allowed(snippet: str) -> None:
    report = check_source(KERNEL + "\n" + snippet + "\n")
    assert report.ok, report.message()


def test_a_module_level_alias_of_an_own_class_is_a_base_but_a_rebound_one_is_not() -> None:
    kept = "_First = ModelNew\n\nclass ModelNew(_First):\n    pass\n"
    assert check_source(KERNEL + kept).ok, check_source(KERNEL + kept).message()
    rebound = "_First = ModelNew\nif n_rows:\n    _First = torch.Tensor\n\nclass ModelNew(_First):\n    pass\n"
    report = check_source(KERNEL + "n_rows = 1\n" + rebound)
    assert report.error_type == ErrorType.FORBIDDEN
    assert "class `ModelNew` derives from `_First`" in report.message(), report.message()


def test_deep_attribute_chains_cost_linear_time() -> None:
    """``resolve`` is memoised: each node of a chain is resolved once (not once per enclosing node)."""
    from ascend_kernel_gym.evaluation import static

    calls = 0
    original = static._Checker._resolve

    def counting(self, node):
        nonlocal calls
        calls += 1
        return original(self, node)

    depth, lines = 150, 40
    code = KERNEL + "".join(f"v{i} = torch" + ".a" * depth + "\n" for i in range(lines))
    static._Checker._resolve = counting  # type: ignore[method-assign]
    try:
        report = check_source(code)
    finally:
        static._Checker._resolve = original  # type: ignore[method-assign]
    assert report.ok, report.message()
    nodes = depth * lines
    assert calls < 4 * nodes, f"{calls} resolutions for {nodes} attribute nodes"


def test_warnings_are_capped() -> None:
    body = "".join(f"        y{i} = torch.relu(x)\n" for i in range(400))
    code = KERNEL.replace("        k[(1,)]", body + "        k[(1,)]")
    report = check_source(code)
    assert report.ok, report.message()
    assert len(report.warnings) <= static_max_warnings() + 1
    assert report.warnings[-1].startswith("... and ") and "more warnings" in report.warnings[-1]


def static_max_warnings() -> int:
    from ascend_kernel_gym.evaluation.static import MAX_WARNINGS

    return MAX_WARNINGS


# --- issue 22 point 5 ---------------------------------------------------------------------------
def test_attributes_named_np_are_refused_only_on_a_module() -> None:
    """``np`` is a forbidden module name, not a forbidden attribute: ``self.np`` and ``cfg.np`` are
    plain attributes; reached through a module (a resolved path) it is still NumPy and refused."""
    honest = KERNEL.replace(
        "    def forward(self, x):\n",
        "    def __init__(self):\n        super().__init__()\n        self.np = 4\n\n"
        "    def forward(self, x):\n        cfg = self\n        assert cfg.np == getattr(self, 'np') == 4\n",
    )
    assert check_source(honest).ok, check_source(honest).message()
    for snippet in (
        "h = nn.functional.np",
        "h = torch.nn.functional.np.zeros(3)",
        "h = getattr(torch.nn.functional, 'np')",
        "import torch.nn.functional as F\nh = F.np",
        "from torch.nn.functional import np as numeric\nZ = numeric.zeros(3)",
    ):
        report = check_source(KERNEL + "\n" + snippet + "\n")
        assert report.error_type == ErrorType.FORBIDDEN and report.hack, snippet
        assert any("np" in v.message for v in report.violations), snippet
    # other module names stay refused as attributes of anything
    assert any("`.os`" in m for m in _errors(KERNEL + "\ndef f(cfg):\n    return cfg.os\n"))


@pytest.mark.parametrize(
    "imports",
    [
        "import numpy as np",
        "import numpy",
        "import numpy.linalg",
        "from numpy import maximum",
        "from numpy import maximum as mx, minimum",
        "import os",
        "def helper():\n    import numpy as np\n    return 1",
        "import numpy as np\nif __name__ == '__main__':\n    print(np.zeros(3))",  # a self-test never runs
    ],
)
def test_an_unused_forbidden_import_is_refused_but_is_no_hack(imports: str) -> None:
    report = check_source(imports + "\n" + KERNEL)
    assert report.error_type == ErrorType.FORBIDDEN and not report.ok
    assert not report.hack and report.hack_violations == []
    assert all(not v.hack for v in report.violations)


@pytest.mark.parametrize(
    "code",
    [
        "import numpy as np\n" + KERNEL + "\nZ = np.zeros(3)\n",
        "import numpy\n" + KERNEL + "\ndef f(x):\n    return numpy.asarray(x)\n",
        "from numpy import maximum\n" + KERNEL + "\nM = maximum\n",
        "import numpy as np\n" + KERNEL + "\ndef f(np):\n    return np\n",  # any mention counts as a use
        "import numpy as np\n" + KERNEL + "\nimport os\nos.getcwd()\n",  # a used one beside it: a hack
        "import numpy as np\n" + KERNEL + "\nX = eval('1')\n",  # another refusal that is a hack
    ],
)
def test_a_forbidden_import_the_code_mentions_is_a_hack(code: str) -> None:
    report = check_source(code)
    assert report.error_type == ErrorType.FORBIDDEN and report.hack
    assert report.hack_violations and all(v.hack for v in report.hack_violations)
