"""Facts read from a candidate's source: aliases, constants, kernels, launch sites, pointer parameters."""

from __future__ import annotations

import ast

from ascend_kernel_gym.ascend.source import (
    call_site_constexprs,
    dotted,
    kernel_uses_dot,
    literal,
    normalise,
    parse_module,
    pointer_params,
    snippet,
)
from ascend_kernel_gym.ascend.values import UNKNOWN

SOURCE = """
import triton
import triton.language as lang
from triton.language import math as tmath
from triton import jit

ROWS = 64
BLOCK_DEFAULT = triton.language.constexpr(256)


@triton.jit
def helper(a, b):
    return lang.dot(a, b)


@jit
def mm(a_ptr, b_ptr, c_ptr, n, BLOCK: lang.constexpr = BLOCK_DEFAULT, *, STAGES: "tl.constexpr" = 2):
    r = lang.arange(0, BLOCK)
    base = a_ptr + r
    a = lang.load(base)
    b = lang.load(b_ptr + r)
    lang.store(c_ptr + r, helper(a, b))


@triton.jit
def scale(x_ptr, out_desc, factor):
    lang.store(out_desc, lang.load(x_ptr) * factor)


def launch(a, b, c):
    BLOCK, OTHER = 128, 7
    mm[(ROWS,)](a, b, c, a.numel(), BLOCK=BLOCK, STAGES=OTHER)
"""


def test_parse_module_reads_aliases_constants_kernels_and_launch_sites() -> None:
    module = parse_module(SOURCE)
    assert module is not None
    assert module.aliases["lang"] == "triton.language" and module.aliases["tmath"] == "triton.language.math"
    assert module.aliases["jit"] == "triton.jit" and module.aliases["tl"] == "triton.language"
    assert module.constants == {"ROWS": 64, "BLOCK_DEFAULT": 256}  # tl.constexpr(...) unwrapped
    assert set(module.kernels) == {"helper", "mm", "scale"}  # @jit through an alias counts
    mm = module.kernels["mm"]
    assert mm.params == ["a_ptr", "b_ptr", "c_ptr", "n", "BLOCK", "STAGES"]
    assert mm.constexpr_params == {"BLOCK", "STAGES"}  # string annotations too
    assert mm.defaults == {"BLOCK": 256, "STAGES": 2}  # a default naming a module constant is resolved
    assert mm.is_launched and not module.kernels["scale"].is_launched
    assert list(module.call_sites) == ["mm"] and "launch" in module.functions
    assert parse_module("def broken(:\n") is None


def test_names_are_normalised_through_aliases() -> None:
    aliases = parse_module(SOURCE).aliases
    expr = ast.parse("lang.math.exp", mode="eval").body
    assert dotted(expr) == "lang.math.exp" and dotted(ast.parse("f()", mode="eval").body) is None
    assert normalise("lang.math.exp", aliases) == "tl.math.exp"
    assert normalise("tmath.exp", aliases) == "tl.math.exp"
    assert normalise("triton.cdiv", aliases) == "triton.cdiv"
    assert normalise("torch.empty", aliases) == "torch.empty"


def test_literals_and_snippets() -> None:
    assert literal(ast.parse("(1, 2.5, 'x')", mode="eval").body) == (1, 2.5, "x")
    assert literal(ast.parse("ROWS", mode="eval").body, {"ROWS": 64}) == 64
    assert literal(ast.parse("ROWS", mode="eval").body) is UNKNOWN
    assert literal(ast.parse("n + 1", mode="eval").body, {"n": 1}) is UNKNOWN
    assert literal(None) is UNKNOWN
    long = ast.parse("f(" + ", ".join(f"a{i}" for i in range(40)) + ")", mode="eval").body
    assert len(snippet(long)) == 70 and snippet(long).endswith("...")


def test_pointer_parameters_dot_use_and_call_site_constexprs() -> None:
    module = parse_module(SOURCE)
    mm, scale = module.kernels["mm"], module.kernels["scale"]
    # roots of loads / stores through assignments; `*_ptr` names count even when unused
    assert pointer_params(module, mm) == ["a_ptr", "b_ptr", "c_ptr"]
    assert pointer_params(module, scale) == ["x_ptr", "out_desc"]
    assert kernel_uses_dot(module, mm)  # through the jit helper it calls
    assert not kernel_uses_dot(module, scale)
    # literals at the first launch site, following the tuple assignment in the launching function
    assert call_site_constexprs(module, mm) == {"BLOCK": 128, "STAGES": 7}
    assert call_site_constexprs(module, scale) == {}
