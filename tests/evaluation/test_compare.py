"""Numeric comparison of outputs (evaluation/compare.py): tolerances, the float32 screen, rounding slack."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from ascend_kernel_gym.evaluation.compare import (  # noqa: E402
    Strays,
    compare,
    has_low_precision,
    inputs_equal,
    outputs_close,
    outputs_identical,
    precision_slack,
    quick_close,
    upcast,
)
from ascend_kernel_gym.evaluation.outputs import OutputCheckError, flatten_outputs  # noqa: E402
from ascend_kernel_gym.evaluation.tensors import storage_ptrs  # noqa: E402


def test_compare_reports_first_bad_index_and_errors() -> None:
    ref = torch.zeros(3, 4)
    cand = ref.clone()
    cand[1, 2] = 0.5
    cand[2, 0] = -2.0
    cmp = compare(cand, ref, atol=1e-3, rtol=1e-3)
    assert not cmp.ok
    assert cmp.first_bad_index == [1, 2]
    assert cmp.max_abs_err == pytest.approx(2.0)
    assert cmp.bad_count == 2
    assert cmp.cand_value == pytest.approx(0.5) and cmp.ref_value == 0.0
    assert math.isfinite(cmp.max_rel_err)


def test_compare_tolerances_and_special_values() -> None:
    ref = torch.tensor([1.0, 100.0, float("nan"), float("inf")])
    ok = torch.tensor([1.00005, 100.009, float("nan"), float("inf")])
    assert compare(ok, ref, atol=1e-4, rtol=1e-4).ok
    bad_nan = torch.tensor([float("nan"), 100.0, float("nan"), float("inf")])
    cmp = compare(bad_nan, ref, atol=1e-4, rtol=1e-4)
    assert not cmp.ok and cmp.nonfinite and cmp.first_bad_index == [0]
    wrong_inf = torch.tensor([1.0, 100.0, float("nan"), -float("inf")])
    assert not compare(wrong_inf, ref, atol=1e-4, rtol=1e-4).ok


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize(("atol", "rtol"), [(1e-5, 1e-5), (1e-2, 0.0), (1e-30, 1e-3), (0.5, 2.0)])
def test_quick_close_never_accepts_what_the_float64_check_refuses(dtype, atol, rtol) -> None:
    gen = torch.Generator().manual_seed(7)
    ref = (torch.randn(4096, generator=gen) * torch.logspace(-4, 3.5, 4096)).to(dtype)  # finite in float16
    bound = atol + rtol * ref.double().abs()
    # Differences at fractions of the float64 bound around 1, where any rounding would show.
    for fraction in (0.5, 0.999, 0.99999, 1.0, 1.00001, 1.001, 2.0):
        cand = (ref.double() + bound * fraction * torch.sign(torch.randn(4096, generator=gen))).to(dtype)
        exact = compare(cand, ref, atol, rtol).ok
        quick = quick_close(cand, ref, atol, rtol)
        assert not quick or exact, (fraction, dtype)
        assert outputs_close(cand, ref, atol, rtol) == exact
    assert quick_close(ref.clone(), ref, atol, rtol)


def test_quick_close_leaves_special_values_and_mixed_inputs_to_the_full_check() -> None:
    ref = torch.tensor([1.0, float("inf"), 3.0])
    assert not quick_close(ref.clone(), ref, 1e-4, 1e-4)  # an infinite reference needs the exact check
    assert outputs_close(ref.clone(), ref, 1e-4, 1e-4)
    finite = torch.tensor([1.0, 2.0, 3.0])
    assert not quick_close(torch.tensor([1.0, float("nan"), 3.0]), finite, 1e-4, 1e-4)
    assert not quick_close(torch.tensor([1.0, float("inf"), 3.0]), finite, 1.0, 1e30)
    assert not quick_close(finite.double(), finite, 1e-4, 1e-4)  # different dtypes
    # Where the float32 screen does not apply (float64, a zero atol that could underflow in float32,
    # integers), equal outputs pass and anything else is left to the full check.
    other = torch.tensor([1.0, 2.0, 3.5])
    pairs = ((finite.double(), other.double(), 1e-4), (finite, other, 0.0), (finite.long(), finite.long() + 1, 0))
    for a, b, atol in pairs:
        assert quick_close(a, a.clone(), atol, 1e-4) and not quick_close(a, b, atol, 1e-4)
    assert not quick_close(ref.double(), ref.double(), 1e-4, 1e-4)  # an infinite reference: the full check
    assert not quick_close(finite, finite.clone(), 0.0, 0.0, torch.zeros(3))  # a slack: the float32 screen only
    assert not quick_close(finite.to(torch.complex64), finite.to(torch.complex64), 0.0, 0.0)


@pytest.mark.parametrize("dtype", [torch.float64, torch.int64, torch.bool, torch.bfloat16, torch.uint8])
def test_the_equality_screen_never_accepts_what_the_float64_check_refuses(dtype, monkeypatch) -> None:
    from ascend_kernel_gym.evaluation import compare as compare_module

    monkeypatch.setattr(compare_module, "COMPARE_CHUNK", 5)  # several pieces, a difference in any of them
    gen = torch.Generator().manual_seed(3)
    ref = (torch.randn(23, generator=gen) * 50).to(dtype)
    assert quick_close(ref.clone(), ref, 0.0, 0.0) and compare(ref.clone(), ref, 0.0, 0.0).ok
    for at in range(23):
        cand = ref.clone()
        if dtype == torch.bool:
            cand[at] = ~cand[at]
        else:
            cand[at] = cand[at] + 1 if not dtype.is_floating_point else cand[at] * 2 + 1
        assert not quick_close(cand, ref, 0.0, 0.0) and not compare(cand, ref, 0.0, 0.0).ok


def test_quick_close_widens_the_bound_by_the_slack_only() -> None:
    ref = torch.tensor([1.0, 2.0], dtype=torch.float16)
    cand = torch.tensor([1.0, 2.5], dtype=torch.float16)
    assert not quick_close(cand, ref, 1e-3, 1e-3)
    assert quick_close(cand, ref, 1e-3, 1e-3, torch.tensor([0.0, 0.6]))
    assert not quick_close(cand, ref, 1e-3, 1e-3, torch.tensor([0.6, 0.0]))
    assert not quick_close(cand, ref, 1e-3, 1e-3, torch.tensor([0.6]))  # a slack of another shape


def test_outputs_identical_is_nan_aware_and_exact() -> None:
    a = torch.tensor([1.0, float("nan"), -0.0])
    assert outputs_identical(a, torch.tensor([1.0, float("nan"), 0.0]))
    assert not outputs_identical(a, torch.tensor([1.0, 2.0, 0.0]))
    assert not outputs_identical(a, a.double())
    assert outputs_identical(torch.arange(3), torch.arange(3))
    assert not outputs_identical(torch.arange(3), torch.arange(1, 4))


def test_aliasing_and_mutation_helpers() -> None:
    x = torch.randn(5)
    assert x.untyped_storage().data_ptr() in storage_ptrs([x])
    assert x[1:].untyped_storage().data_ptr() in storage_ptrs([x])  # a view shares the storage
    y = x.clone()
    y[0] += 1
    assert inputs_equal([x, 1], [y, 1]) == [0]
    assert inputs_equal([x], [x.clone()]) == []


def _fp16_chain(x: torch.Tensor) -> torch.Tensor:
    """Rounds every intermediate in float16: far from the true value for some elements."""
    return (x * 37.0 + 1000.0) - 1000.0


def test_precision_slack_is_the_float16_references_own_error() -> None:
    x = torch.linspace(-3, 3, 4096, dtype=torch.float16)
    ref = _fp16_chain(x)
    ref_hi = _fp16_chain(x.float())
    slack = precision_slack(ref, ref_hi)
    assert slack is not None and len(slack) == 1 and slack[0].dtype == torch.float32
    expected = (ref.double() - ref_hi.double()).abs().float()
    assert torch.equal(slack[0], expected) and float(expected.max()) > 0.1
    exact = ref_hi.half()  # what a candidate computing in float32 and rounding once returns
    assert not compare(exact, ref, 1e-2, 1e-2).ok
    assert compare(exact, ref, 1e-2, 1e-2, slack[0]).ok
    assert outputs_close((exact, exact), (ref, ref), 1e-2, 1e-2, slack * 2)
    wrong = exact + 0.5
    assert not compare(wrong, ref, 1e-2, 1e-2, slack[0]).ok


def test_precision_slack_skips_float32_outputs_non_finite_values_and_mismatched_structures() -> None:
    ref32 = torch.ones(4)
    assert precision_slack(ref32, ref32 * 2) == [None]
    ref = torch.tensor([1.0, float("inf"), 2.0], dtype=torch.float16)
    hi = torch.tensor([1.5, 3.0, float("nan")])
    slack = precision_slack(ref, hi)
    assert slack is not None and slack[0].tolist() == [0.5, 0.0, 0.0]
    assert precision_slack((ref, ref), ref.float()) is None
    assert has_low_precision((ref32, [ref])) and not has_low_precision(ref32)
    assert [t.dtype for t in upcast([ref, ref32, 3])[:2]] == [torch.float32, torch.float32]


def test_integer_outputs_must_match_exactly() -> None:
    ref = torch.tensor([2_000_000, 5, 0])
    assert not compare(ref + torch.tensor([1, 0, 0]), ref, atol=1e-4, rtol=1e-4).ok  # within rtol * |ref|
    assert compare(ref.clone(), ref, atol=1e-4, rtol=1e-4).ok
    flags = torch.tensor([True, False])
    assert not compare(~flags, flags, atol=1.0, rtol=1.0).ok


def test_none_in_the_reference_output_pairs_with_none() -> None:
    out = torch.ones(2)
    assert [label for *_, label in flatten_outputs((out, None), (out, None))] == ["output[0]"]
    with pytest.raises(OutputCheckError, match="None"):
        flatten_outputs((out, out), (out, None))
    assert outputs_close((out, None), (out, None), 1e-4, 1e-4) and outputs_identical((out, None), (out, None))
    assert outputs_close(2.5, 2.5, 1e-4, 1e-4) and not outputs_identical(None, out)


def test_rounding_moves_measure_how_far_the_reference_moved() -> None:
    from ascend_kernel_gym.evaluation.compare import rounding_moves

    ref = (torch.tensor([1.0, 2.0, float("inf")]), torch.tensor([1, 2]))
    moved = (torch.tensor([1.5, 2.0, 3.0]), torch.tensor([1, 3]))
    moves = rounding_moves(ref, moved)
    assert moves is not None and moves[1] is None  # integer outputs get no slack
    assert moves[0].tolist() == [0.5, 0.0, 0.0]  # where either side is not finite: none
    assert rounding_moves(ref, (moved[0],)) is None  # another structure


def test_gaps_computed_in_pieces_equal_the_whole_computation(monkeypatch) -> None:
    from ascend_kernel_gym.evaluation import compare as compare_module

    gen = torch.Generator().manual_seed(3)
    ref = torch.randn(37, 29, generator=gen).to(torch.bfloat16).t()  # not contiguous
    hi = ref.float() + torch.randn(29, 37, generator=gen) * 1e-2
    hi[3, 4] = float("nan")
    hi[5, 6] = float("inf")
    whole = precision_slack(ref, hi)
    monkeypatch.setattr(compare_module, "GAP_CHUNK", 7)  # 1073 elements in 154 pieces
    pieces = precision_slack(ref, hi)
    assert whole is not None and pieces is not None
    expected = torch.where(
        torch.isfinite(hi), (ref.double() - hi.double()).abs(), torch.zeros((), dtype=torch.float64)
    ).float()
    assert pieces[0].shape == ref.shape and torch.equal(pieces[0], whole[0]) and torch.equal(whole[0], expected)
    assert float(pieces[0][3, 4]) == 0.0 and float(pieces[0][5, 6]) == 0.0


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_gaps_in_float32_equal_the_float64_difference_rounded(dtype) -> None:
    from ascend_kernel_gym.evaluation.compare import rounding_moves

    gen = torch.Generator().manual_seed(11)
    scale = torch.logspace(-20, 20, 4096).to(torch.float32)  # wide magnitudes, values near each other and not
    ref = (torch.randn(4096, generator=gen) * scale).to(dtype)
    moved = (ref.float() * (1 + torch.randn(4096, generator=gen) * 1e-3)).to(dtype)
    moved[::7] = (torch.randn(586, generator=gen) * 1e30).to(dtype)  # far away (overflowing float16)
    gaps = rounding_moves(ref, moved)
    both = torch.isfinite(ref.double()) & torch.isfinite(moved.double())
    exact = torch.where(both, (ref.double() - moved.double()).abs(), torch.zeros((), dtype=torch.float64)).float()
    assert gaps is not None and torch.equal(gaps[0], exact)


def test_gaps_of_float64_outputs_keep_float64_precision() -> None:
    from ascend_kernel_gym.evaluation.compare import rounding_moves

    ref = torch.tensor([1.0, 1e10], dtype=torch.float64)
    moved = ref + torch.tensor([1e-12, 1e-3], dtype=torch.float64)  # lost if each side were made float32 first
    gaps = rounding_moves(ref, moved)
    assert gaps is not None and gaps[0].dtype == torch.float32 and bool((gaps[0] > 0).all())


def _whole_tensor_comparison(cand, ref, atol, rtol, slack=None):
    """The comparison's statistics computed on the whole tensors at once (an oracle for the pieces)."""
    c, r = cand.double(), ref.double()
    finite_r, finite_c = torch.isfinite(r), torch.isfinite(c)
    diff = (c - r).abs()
    bound = atol + rtol * r.abs() if ref.is_floating_point() else torch.zeros_like(r)
    if slack is not None:
        bound = bound + slack.double()
    good = torch.where(finite_r, (diff <= bound) & finite_c, (c == r) | (torch.isnan(c) & torch.isnan(r)))
    both = finite_r & finite_c
    d = torch.where(both, diff, torch.zeros_like(diff))
    rel = torch.where(both, d / (r.abs() + max(atol, 1e-12)), torch.zeros_like(d))
    bad = (~good).reshape(-1)
    first = int(torch.nonzero(bad)[0, 0]) if bool(bad.any()) else None
    return float(d.max()), float(rel.max()), int(bad.sum()), first


@pytest.mark.parametrize("case", ["float", "bfloat16_exact", "integer", "slack", "all_good"])
def test_comparisons_in_pieces_equal_the_whole_computation(monkeypatch, case) -> None:
    """A whole-output comparison took about 16 times the output's size in float64 temporaries
    (21 GB for a 512 MB transpose on an H100); it now goes in pieces, with the same answer."""
    from ascend_kernel_gym.evaluation import compare as compare_module

    gen = torch.Generator().manual_seed(11)
    ref = torch.randn(41, 37, generator=gen)
    atol, rtol, slack = 1e-3, 1e-3, None
    cand = ref + torch.randn(41, 37, generator=gen) * 1e-4
    if case == "float":
        cand[2, 3], cand[30, 1], cand[40, 36] = 5.0, float("nan"), float("inf")
        ref[7, 7], cand[7, 7] = float("nan"), float("nan")  # matched specials are fine
        ref[9, 9], cand[9, 9] = float("inf"), 1.0  # a finite answer to an infinite reference is not
    elif case == "bfloat16_exact":  # a transpose: no tolerance at all, so no float32 screen
        ref = ref.to(torch.bfloat16).t()  # not contiguous
        cand = ref.contiguous().clone()
        cand[20, 30] = cand[20, 30] * 2 + 1
        atol = rtol = 0.0
    elif case == "integer":
        ref = torch.randint(0, 9, (41, 37), generator=gen)
        cand = ref.clone()
        cand[0, 5] += 1
        cand[33, 2] -= 3
    elif case == "slack":
        slack = torch.zeros(41, 37)
        cand[4, 4] = ref[4, 4] + 0.5
        slack[4, 4] = 0.6  # widened enough
        cand[6, 6] = ref[6, 6] + 0.5  # not widened
    expected = _whole_tensor_comparison(cand, ref, atol, rtol, slack)
    monkeypatch.setattr(compare_module, "COMPARE_CHUNK", 5)  # 1517 elements in 304 pieces
    got = compare(cand, ref, atol, rtol, slack)
    max_abs, max_rel, bad_count, first = expected
    assert got.bad_count == bad_count and got.ok == (bad_count == 0)
    if first is None:
        assert (got.max_abs_err, got.max_rel_err) == (max_abs, max_rel)
        assert quick_close(cand, ref, atol, rtol, slack) in (True, False)  # the screen may only say yes
    else:
        flat_c, flat_r = cand.reshape(-1), ref.reshape(-1)
        assert got.first_bad_index == list(divmod(first, ref.shape[1]))
        assert got.cand_value == pytest.approx(float(flat_c[first]), nan_ok=True)
        assert got.ref_value == pytest.approx(float(flat_r[first]), nan_ok=True)
        if got.nonfinite:
            assert math.isinf(got.max_abs_err)
        else:
            assert (got.max_abs_err, got.max_rel_err) == (max_abs, max_rel)
        assert not quick_close(cand, ref, atol, rtol, slack)  # one bad piece is enough to refuse


def test_the_float32_screen_in_pieces_accepts_what_it_accepted_whole(monkeypatch) -> None:
    from ascend_kernel_gym.evaluation import compare as compare_module

    gen = torch.Generator().manual_seed(12)
    ref = torch.randn(64, 33, generator=gen).to(torch.float16)
    cand = (ref.float() + 1e-4).to(torch.float16)
    whole = quick_close(cand, ref, 1e-2, 1e-2)
    monkeypatch.setattr(compare_module, "COMPARE_CHUNK", 10)
    assert whole and quick_close(cand, ref, 1e-2, 1e-2)
    cand[63, 32] = 3.0  # in the last, short piece
    assert not quick_close(cand, ref, 1e-2, 1e-2)


def test_a_compact_slack_is_never_narrower_and_takes_no_room_where_it_is_zero() -> None:
    from ascend_kernel_gym.evaluation.compare import compact_slack

    gen = torch.Generator().manual_seed(5)
    wide = torch.rand(4096, generator=gen) * torch.logspace(-4, 4, 4096)  # float32, many magnitudes
    out16 = torch.zeros(4096, dtype=torch.float16)
    out_bf = torch.zeros(4096, dtype=torch.bfloat16)
    out32 = torch.zeros(4096)
    zero = torch.zeros(4096)
    huge = torch.full((4,), 1e6)  # beyond float16's range: clamped to its largest value, not inf
    compact = compact_slack(
        [wide, wide, wide, zero, None, huge], (out16, out_bf, out32, out32, torch.ones(2, dtype=torch.int64), out16[:4])
    )
    half, brain, single, nothing, integer, clamped = compact
    assert half.dtype == torch.float16 and brain.dtype == torch.bfloat16 and single is wide
    normal = wide >= torch.finfo(torch.float16).tiny  # below it float16 steps by 6e-8
    assert bool((half.float()[normal] >= wide[normal]).all()) and bool((brain.float() >= wide).all())
    assert float((brain.float() / wide).max()) < 1.02  # rounded up by less than 2 %
    assert nothing is None and integer is None  # zero everywhere, or no slack at all
    assert bool(torch.isfinite(clamped).all()) and float(clamped.max()) == torch.finfo(torch.float16).max
    # a float16 reference's own error still lets the exact answer through once stored compact
    x = torch.linspace(-3, 3, 4096, dtype=torch.float16)
    ref, exact = _fp16_chain(x), _fp16_chain(x.float()).half()
    stored = compact_slack(precision_slack(ref, _fp16_chain(x.float())), ref)
    assert stored[0].dtype == torch.float16 and compare(exact, ref, 1e-2, 1e-2, stored[0]).ok


def test_strays_let_a_few_finite_elements_lie_a_little_beyond_the_bound() -> None:
    ref = torch.zeros(1000)
    cand = ref.clone()
    cand[[3, 500, 999]] = 0.5  # beyond atol 0.1 by 0.4
    assert not compare(cand, ref, 0.1, 0.0).ok
    lenient = compare(cand, ref, 0.1, 0.0, strays=Strays(allowed=3, reach=0.45))
    assert lenient.ok and lenient.strays == 3
    # one more than allowed: the check fails as if there were no strays, naming every element
    refused = compare(cand, ref, 0.1, 0.0, strays=Strays(allowed=2, reach=0.45))
    assert not refused.ok and refused.bad_count == 3 and refused.first_bad_index == [3]
    # further than the reach, or not finite: never a stray
    far = cand.clone()
    far[500] = 0.6
    assert not compare(far, ref, 0.1, 0.0, strays=Strays(allowed=10, reach=0.45)).ok
    nan = ref.clone()
    nan[7] = float("nan")
    assert not compare(nan, ref, 0.1, 0.0, strays=Strays(allowed=10, reach=1e9)).ok
    # a clean output counts no strays; no allowance changes nothing
    assert compare(ref, ref, 0.1, 0.0, strays=Strays(allowed=3, reach=0.45)).strays == 0
    assert not compare(cand, ref, 0.1, 0.0, strays=Strays(allowed=0, reach=0.45)).ok
