"""Numeric comparison and hidden-input helpers (in-process, CPU)."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from ascend_kernel_gym.evaluation import correctness as cx  # noqa: E402


def test_compare_reports_first_bad_index_and_errors() -> None:
    ref = torch.zeros(3, 4)
    cand = ref.clone()
    cand[1, 2] = 0.5
    cand[2, 0] = -2.0
    cmp = cx.compare(cand, ref, atol=1e-3, rtol=1e-3)
    assert not cmp.ok
    assert cmp.first_bad_index == [1, 2]
    assert cmp.max_abs_err == pytest.approx(2.0)
    assert cmp.bad_count == 2
    assert cmp.cand_value == pytest.approx(0.5) and cmp.ref_value == 0.0
    assert math.isfinite(cmp.max_rel_err)


def test_compare_tolerances_and_special_values() -> None:
    ref = torch.tensor([1.0, 100.0, float("nan"), float("inf")])
    ok = torch.tensor([1.00005, 100.009, float("nan"), float("inf")])
    assert cx.compare(ok, ref, atol=1e-4, rtol=1e-4).ok
    bad_nan = torch.tensor([float("nan"), 100.0, float("nan"), float("inf")])
    cmp = cx.compare(bad_nan, ref, atol=1e-4, rtol=1e-4)
    assert not cmp.ok and cmp.nonfinite and cmp.first_bad_index == [0]
    wrong_inf = torch.tensor([1.0, 100.0, float("nan"), -float("inf")])
    assert not cx.compare(wrong_inf, ref, atol=1e-4, rtol=1e-4).ok


def test_flatten_outputs_checks_structure() -> None:
    t = torch.ones(2)
    assert len(cx.flatten_outputs((t, t), (t, t))) == 2
    with pytest.raises(cx.OutputCheckError) as info:
        cx.flatten_outputs(t, (t, t))
    assert info.value.kind == "wrong_output_type"
    with pytest.raises(cx.OutputCheckError) as info:
        cx.flatten_outputs((t,), (t, t))
    assert info.value.kind == "shape_mismatch"
    with pytest.raises(cx.OutputCheckError):
        cx.flatten_outputs(torch.nn.Parameter(t), t)  # subclasses are not plain tensors


class _TaskModule:
    def get_inputs(self):
        return [torch.rand(4, 8), torch.randint(0, 5, (4,)), 3]


def test_make_inputs_is_seeded_and_perturbs_only_floats() -> None:
    module = _TaskModule()
    device = torch.device("cpu")
    a = cx.make_inputs(module, 11, "task", device)
    b = cx.make_inputs(module, 11, "task", device)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) and a[2] == 3
    for distribution in cx.DISTRIBUTIONS[1:]:
        p = cx.make_inputs(module, 11, distribution, device)
        assert p[0].shape == a[0].shape and p[0].dtype == a[0].dtype
        assert not torch.equal(p[0], a[0])
        assert torch.equal(p[1], a[1]) and p[2] == 3  # integers and scalars untouched
    uniform01 = a[0]
    shifted = cx.make_inputs(module, 12, "shifted", device)[0]
    assert (uniform01 >= 0).all() and not (shifted >= 0).all()  # not only uniform [0, 1)


def test_trial_distributions_vary() -> None:
    import random

    rng = random.Random(0)
    seen = {cx.trial_distribution(t, rng) for t in range(1, 9)}
    assert cx.trial_distribution(0, rng) == "task"
    assert len(seen) >= 3


def test_aliasing_and_mutation_helpers() -> None:
    x = torch.randn(5)
    assert x.untyped_storage().data_ptr() in cx.storage_ptrs([x])
    assert x[1:].untyped_storage().data_ptr() in cx.storage_ptrs([x])  # a view shares the storage
    y = x.clone()
    y[0] += 1
    assert cx.inputs_equal([x, 1], [y, 1]) == [0]
    assert cx.inputs_equal([x], [x.clone()]) == []


def test_compile_error_points_at_candidate_line(tmp_path) -> None:
    """Triton's CompilationError gives 'at L:C' relative to the kernel's def line."""
    import ast

    from ascend_kernel_gym.evaluation.errors import compile_error_line, describe_exception

    code = "import triton\n\n\n@triton.jit\ndef my_kernel(x_ptr):\n    a = 1\n    b = tl.bad(a)\n"
    path = tmp_path / "kernel.py"
    path.write_text(code)

    class FakeCompilationError(Exception):
        def __init__(self) -> None:
            self.src = "def my_kernel(x_ptr):\n    a = 1\n    b = tl.bad(a)\n"
            self.node = ast.parse("b = tl.bad(a)").body[0]
            self.node.lineno = 3
            super().__init__("at 3:8:\nunknown function tl.bad")

    err = FakeCompilationError()
    assert compile_error_line(err, str(path)) == (
        "your code line 7 (in my_kernel, the Triton compiler's error): b = tl.bad(a)"
    )
    assert "your code line 7" in describe_exception(err, str(path))
    assert compile_error_line(ValueError("x"), str(path)) is None


def test_live_path_check_refuses_re_exported_modules() -> None:
    """A library module re-exporting a forbidden one, and modules handed around as values."""
    import torch.nn.functional  # noqa: F401

    from ascend_kernel_gym.evaluation.errors import StageError
    from ascend_kernel_gym.evaluation.livecheck import check_live_paths

    check_live_paths(["torch.nn.functional.relu", "torch.empty", "triton.cdiv"], ["torch.nn.functional.relu"])
    with pytest.raises(StageError, match="forbidden"):
        check_live_paths(["torch.nn.functional.np"])  # numpy, re-exported by torch.nn.functional
    with pytest.raises(StageError, match="used as a value"):
        check_live_paths(["torch.nn"], ["torch.nn"])


# --- the float16 reference's own rounding error --------------------------------------------------------


def _fp16_chain(x: torch.Tensor) -> torch.Tensor:
    """Rounds every intermediate in float16: far from the true value for some elements."""
    return (x * 37.0 + 1000.0) - 1000.0


def test_precision_slack_is_the_float16_references_own_error() -> None:
    x = torch.linspace(-3, 3, 4096, dtype=torch.float16)
    ref = _fp16_chain(x)
    ref_hi = _fp16_chain(x.float())
    slack = cx.precision_slack(ref, ref_hi)
    assert slack is not None and len(slack) == 1 and slack[0].dtype == torch.float32
    expected = (ref.double() - ref_hi.double()).abs().float()
    assert torch.equal(slack[0], expected) and float(expected.max()) > 0.1
    exact = ref_hi.half()  # what a candidate computing in float32 and rounding once returns
    assert not cx.compare(exact, ref, 1e-2, 1e-2).ok
    assert cx.compare(exact, ref, 1e-2, 1e-2, slack[0]).ok
    assert cx.outputs_close((exact, exact), (ref, ref), 1e-2, 1e-2, slack * 2)
    wrong = exact + 0.5
    assert not cx.compare(wrong, ref, 1e-2, 1e-2, slack[0]).ok


def test_precision_slack_skips_float32_outputs_non_finite_values_and_mismatched_structures() -> None:
    ref32 = torch.ones(4)
    assert cx.precision_slack(ref32, ref32 * 2) == [None]
    ref = torch.tensor([1.0, float("inf"), 2.0], dtype=torch.float16)
    hi = torch.tensor([1.5, 3.0, float("nan")])
    slack = cx.precision_slack(ref, hi)
    assert slack is not None and slack[0].tolist() == [0.5, 0.0, 0.0]
    assert cx.precision_slack((ref, ref), ref.float()) is None
    assert cx.has_low_precision((ref32, [ref])) and not cx.has_low_precision(ref32)
    assert [t.dtype for t in cx.upcast([ref, ref32, 3])[:2]] == [torch.float32, torch.float32]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.bool])
def test_clone_placed_starts_the_copy_at_the_offset_of_its_own_allocation(dtype) -> None:
    x = (torch.arange(24).reshape(2, 3, 4) % 5).to(dtype)
    placed = cx.clone_placed(x, 1024)
    assert torch.equal(placed, x) and placed.dtype == dtype and placed.shape == x.shape
    assert placed.is_contiguous()
    assert placed.data_ptr() - placed.untyped_storage().data_ptr() == 1024
    assert placed.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
    expected = x.clone()
    x.zero_()  # a copy, not a view of the original
    assert torch.equal(placed, expected)


def test_clone_placed_falls_back_to_a_plain_clone() -> None:
    x = torch.randn(4, 6)
    for value, offset in ((x.t(), 512), (x, 0), (x.requires_grad_(True), 512), (torch.empty(0), 512)):
        copy = cx.clone_placed(value, offset)
        assert torch.equal(copy, value) and copy.storage_offset() == 0
        assert copy.untyped_storage().data_ptr() != value.untyped_storage().data_ptr() or value.numel() == 0
    assert cx.clone_placed(3.5, 512) == 3.5


def test_placement_offsets_are_aligned_and_bounded_by_the_tensor_size() -> None:
    import random

    rng = random.Random(0)
    big = torch.empty(64 << 20, dtype=torch.uint8)  # 64 MiB: offsets up to PLACEMENT_SPAN
    small = torch.empty(700, dtype=torch.uint8)  # rounds up to 1024 bytes: offset 0 or 512
    big_offsets = {cx.placement_offset(big, rng) for _ in range(200)}
    small_offsets = {cx.placement_offset(small, rng) for _ in range(50)}
    assert all(o % cx.PLACEMENT_ALIGN == 0 and 0 <= o < cx.PLACEMENT_SPAN for o in big_offsets)
    assert len(big_offsets) > 150 and max(big_offsets) > cx.PLACEMENT_SPAN // 2
    assert small_offsets == {0, 512}
    assert cx.placement_offset([1, 2], rng) == 0
