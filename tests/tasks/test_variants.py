"""Kernel variants: launch-configuration changes, broken copies and hacks made from a reference solution.

The makers only rewrite source text; whether a variant is correct is the evaluator's call, tested
with the real evaluator in tests/integrations/test_sb3.py. Here: each maker changes exactly what
it claims, every generated variant parses, and misuse fails loudly.
"""

from __future__ import annotations

import ast

import pytest

from ascend_kernel_gym.tasks import get_task, load_suite
from ascend_kernel_gym.tasks.variants import (
    DEFAULT_BLOCK_SIZES,
    DEFAULT_MUTATIONS,
    broken_variant,
    fenced,
    hacky_variant,
    kernel_variants,
    torch_fallback_source,
    with_block_size,
    with_grid_minus_one,
    with_launch_skipped,
    with_mask_off_by_one,
)

RELU = "core/L1/relu"
MENU = (
    "reference",
    "block_size=128",
    "block_size=2048",
    "block_size=8192",
    "grid_minus_one",
    "mask_off_by_one",
    "skip_launch",
    "torch_fallback",
)


def test_block_size_rewrites_assignments_tuples_and_keywords_on_the_host_only():
    source = (
        "@triton.jit\n"
        "def k(x, BLOCK_SIZE: tl.constexpr):\n"
        "    BLOCK_SIZE2 = 7\n"
        "def host(x):\n"
        "    BLOCK_M, BLOCK_N = 64, 32\n"
        "    k[(1,)](x, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N)\n"
    )
    out = with_block_size(source, 128)
    assert "BLOCK_M, BLOCK_N = 128, 32" in out
    assert "BLOCK_SIZE2 = 7" in out  # kernel body untouched
    keyword = with_block_size("def f(x):\n    k[(1,)](x, BLOCK_SIZE=1024)\n", 64)
    assert "BLOCK_SIZE=64" in keyword
    assert with_block_size("def f(x):\n    return x\n", 64) is None
    same = "def f(x):\n    BLOCK = 64\n"
    assert with_block_size(same, 64) == same


def test_mutations_change_exactly_what_they_claim():
    reference = get_task(RELU).solution_source()
    masked = with_mask_off_by_one(reference)
    assert masked is not None and "- 1" in masked and masked != reference
    assert reference.count("\n") == masked.count("\n")
    grid = with_grid_minus_one(reference)
    assert grid is not None and "max(" in grid and "- 1, 1)" in grid
    skipped = with_launch_skipped(reference)
    assert skipped is not None and "relu_kernel[" not in skipped and "launch removed" in skipped
    assert with_mask_off_by_one("def f(:") is None


def test_kernel_variants_default_menu_and_every_variant_parses():
    task = get_task(RELU)
    variants = kernel_variants(task)
    assert tuple(v.name for v in variants) == MENU
    assert variants[0].code == task.solution_source()
    kinds = {v.name: v.kind for v in variants}
    assert kinds["mask_off_by_one"] == "broken" and kinds["torch_fallback"] == "hack"
    assert len({v.code for v in variants}) == len(variants)  # all distinct for relu
    fallback = next(v for v in variants if v.name == "torch_fallback").code
    assert "class ModelNew(Model)" in fallback and "@triton.jit" in fallback
    for task in load_suite("core"):
        if task.solution_path is None:
            continue
        for variant in kernel_variants(task):
            ast.parse(variant.code)  # a generator bug shows up as a syntax error here


def test_kernel_variants_rejects_misuse():
    task = get_task(RELU)
    with pytest.raises(ValueError, match="mutations"):
        kernel_variants(task, mutations=["nope"])
    with pytest.raises(ValueError, match="block_sizes"):
        kernel_variants(task, block_sizes=[0])
    with pytest.raises(ValueError, match="duplicate"):
        kernel_variants(task, extra={"reference": "x"})


def test_default_block_sizes_and_mutations_make_the_default_menu():
    assert ("reference", *(f"block_size={b}" for b in DEFAULT_BLOCK_SIZES), *DEFAULT_MUTATIONS) == MENU


def test_kernel_variants_marks_slots_that_do_not_apply_as_missing():
    task = get_task(RELU)
    variants = kernel_variants(task, block_sizes=[64], mutations=["skip_launch"], extra={"mine": "class ModelNew: ..."})
    assert [(v.name, v.kind) for v in variants] == [
        ("reference", "reference"),
        ("block_size=64", "launch_config"),
        ("skip_launch", "hack"),
        ("mine", "custom"),
    ]
    no_reference = kernel_variants(task, include_reference=False, block_sizes=[], mutations=[])
    assert no_reference == []


def test_torch_fallback_inherits_the_reference_and_never_launches_its_kernel():
    task = get_task(RELU)
    code = torch_fallback_source(task)
    tree = ast.parse(code)
    model_new = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ModelNew")
    assert [ast.unparse(b) for b in model_new.bases] == ["Model"]
    assert "copy_kernel[" not in code and "@triton.jit" in code
    assert task.prompt_source("full").rstrip() in code


def test_broken_variant_keeps_the_solution_and_overrides_forward_to_raise():
    solution = get_task(RELU).solution_source()
    code = broken_variant(solution)
    assert code.startswith(solution.rstrip())
    namespace: dict = {}
    exec(  # the broken class only: its base is a stand-in for the working ModelNew
        compile(code[len(solution.rstrip()) :], "<broken>", "exec"),
        {"ModelNew": type("ModelNew", (), {"forward": lambda self, x: x})},
        namespace,
    )
    with pytest.raises(RuntimeError, match="deliberately broken"):
        namespace["ModelNew"]().forward(1)


def test_hacky_variant_subclasses_the_reference_with_a_decoy_kernel():
    reference = get_task(RELU).prompt_source("full")
    code = hacky_variant(reference)
    tree = ast.parse(code)
    classes = {n.name: [ast.unparse(b) for b in n.bases] for n in tree.body if isinstance(n, ast.ClassDef)}
    assert classes["ModelNew"] == ["Model"] and "Model" in classes
    assert "decoy_kernel[" not in code and "def decoy_kernel" in code


def test_fenced_wraps_code_in_one_python_block():
    assert fenced("x = 1\n\n") == "```python\nx = 1\n```"
