"""The names a @triton.jit body may read (``evaluation/static_kernels.py``): what compiled Triton resolves."""

from __future__ import annotations

import textwrap

import pytest

from ascend_kernel_gym.evaluation.static import check_source

HEADER = "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n"
MODEL = """

class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        kernel[(1,)](x, out, x.numel(), BLOCK=128)
        return out
"""


def _problems(body: str) -> list[str]:
    report = check_source(HEADER + textwrap.dedent(body) + MODEL)
    return [v.message for v in report.violations if "compiled Triton" in v.message or "rebind" in v.message]


ALLOWED = {
    "constexpr, annotated literal, literal, alias of tl.math, jit helper": """
        LOG2E = tl.constexpr(1.4426950408889634)
        NEG: tl.constexpr = -1.0e30
        ONE = 1.0
        SIZES = (1, 2)
        tlm = tl.math

        @triton.jit
        def helper(v):
            return v * ONE

        @triton.jit
        def kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            x = tl.load(x_ptr + offs, mask=offs < n, other=NEG)
            tl.store(out_ptr + offs, helper(tlm.exp2(x * LOG2E)) + SIZES[0], mask=offs < n)
    """,
    "aliases and conditional definitions of jit helpers": """
        FAST = True
        if FAST:
            @triton.jit
            def _act(v):
                return tl.maximum(v, 0.0)
        else:
            @triton.jit
            def _act(v):
                return tl.where(v > 0, v, 0.0)
        act = _act
        chosen = _act if FAST else act

        @triton.jit
        def kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(out_ptr + offs, chosen(tl.load(x_ptr + offs, mask=offs < n)), mask=offs < n)
    """,
    "a kernel factory closing over a constexpr, and Triton's builtins": """
        def make(slope):
            SLOPE: tl.constexpr = tl.constexpr(slope)

            @triton.jit
            def inner(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
                offs = tl.arange(0, BLOCK)
                for i in range(min(len((1, 2)), 2)):
                    x = tl.load(x_ptr + offs, mask=offs < n)
                tl.store(out_ptr + offs, tl.where(x > 0, x, x * SLOPE), mask=offs < n)

            return inner

        kernel = make(0.1)
    """,
    "configs read by the decorator, not the kernel": """
        CONFIGS = [triton.Config({}, num_warps=4)]

        @triton.autotune(configs=CONFIGS, key=["n"])
        @triton.jit
        def kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
    """,
}

REFUSED = {
    "a module-level list": (
        "SEEN",
        """
        SEEN = []

        @triton.jit
        def kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
            SEEN.append(tl.load(x_ptr))
    """,
    ),
    "str": (
        "`str`",
        """
        @triton.jit
        def kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
            text = str(tl.load(x_ptr))
    """,
    ),
    "a global statement": (
        "global",
        """
        COUNT = 0

        @triton.jit
        def kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
            global COUNT
    """,
    ),
    "a factory's parameter": (
        "table",
        """
        def make(table):
            @triton.jit
            def inner(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
                tl.store(out_ptr, table[0])

            return inner

        kernel = make([1.0])
    """,
    ),
    "a plain function wrapped by triton.jit reading a dict": (
        "ANSWERS",
        """
        ANSWERS = {}

        def body(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
            tl.store(out_ptr, ANSWERS[0])

        kernel = triton.jit(body)
    """,
    ),
    "an alias of a list, through a conditional": (
        "PICK",
        """
        A = [1.0]
        PICK = A if True else 2.0

        @triton.jit
        def kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
            tl.store(out_ptr, PICK[0])
    """,
    ),
}


@pytest.mark.parametrize("name", sorted(ALLOWED))
def test_names_compiled_triton_resolves_are_allowed(name: str) -> None:
    assert _problems(ALLOWED[name]) == []


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_names_only_the_interpreter_resolves_are_refused(name: str) -> None:
    needle, body = REFUSED[name]
    problems = _problems(body)
    assert problems and any(needle in p for p in problems), problems
