"""Numeric comparison of outputs: tolerances, the float32 screen, the reference's rounding error.

Comparison is done in float64 on the device that produced the outputs (on the interpreter that
is the CPU; on a GPU a float64 compare of a 256 MB output takes milliseconds where a CPU copy
would take a second): ``|cand - ref| <= atol + rtol * |ref|`` element-wise, non-finite
reference values must be matched exactly. The reported relative error is
``max |cand - ref| / (|ref| + atol)`` (finite for zero references).

Imports torch: use only in evaluator children and tests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

from ascend_kernel_gym.evaluation.outputs import SCALAR_TYPES, OutputCheckError, flatten_outputs

#: Tensor methods are called through the class: a candidate can shadow a method with an instance
#: attribute on a tensor it returns or receives (``out.detach = ...``), never on the class.
_TENSOR = torch.Tensor


@dataclass
class Comparison:
    ok: bool
    max_abs_err: float
    max_rel_err: float
    bad_count: int = 0
    first_bad_index: list[int] = field(default_factory=list)
    cand_value: float | None = None
    ref_value: float | None = None
    nonfinite: bool = False
    #: elements beyond the tolerance but accepted as :class:`Strays`
    strays: int = 0


@dataclass(frozen=True)
class Strays:
    """How many elements of one output may lie beyond the tolerance, and by how much at most.

    Where the reference is ill-conditioned (attention on large logits: one rounding step of the
    inputs picks another key), the envelope of a few moved reference runs (the sensitivity slack)
    leaves out some elements that a further rounding would move too. A kernel that rounds
    differently than the reference then misses that envelope at a handful of elements of a
    hundred-million-element output, by the size of such a move, at random. ``allowed`` such
    elements pass when each is finite and within the tolerance plus ``reach``
    (:mod:`.reference_run` derives both from the moved runs; zero on well-conditioned trials).
    """

    allowed: int
    reach: float


#: elements per piece of a comparison: its float64 temporaries take about 64 MB each. Whole, a
#: comparison's temporaries took about 16 times the output's size in float64: checking a 512 MB
#: bfloat16 transpose (no tolerance, so no float32 screen) reserved 21 GB in each of the two
#: children of an evaluation on an H100, and with eight workers sharing it such evaluations ran
#: alone (2026-12-06)
COMPARE_CHUNK = 1 << 23


def compare(
    cand: torch.Tensor,
    ref: torch.Tensor,
    atol: float,
    rtol: float,
    slack: torch.Tensor | None = None,
    strays: Strays | None = None,
) -> Comparison:
    """Element-wise tolerance check in float64 (shapes must already match), :data:`COMPARE_CHUNK`
    elements at a time.

    ``slack`` (from :func:`precision_slack`) widens each element's tolerance by the reference's
    own rounding error; ``strays`` lets a few finite elements lie a little beyond it (more than
    allowed: the check fails as if there were none).
    """
    if strays is not None and strays.allowed > 0 and strays.reach > 0.0:
        lenient = _compare(cand, ref, atol, rtol, slack, strays.reach)
        if lenient.ok and lenient.strays <= strays.allowed:
            return lenient
    return _compare(cand, ref, atol, rtol, slack, 0.0)


def _compare(
    cand: torch.Tensor, ref: torch.Tensor, atol: float, rtol: float, slack: torch.Tensor | None, reach: float
) -> Comparison:
    cand, ref = _TENSOR.detach(cand), _TENSOR.detach(ref)
    if cand.numel() == 0:
        return Comparison(True, 0.0, 0.0)
    floating = _TENSOR.is_floating_point(ref) or _TENSOR.is_complex(ref)
    flat_c = _TENSOR.reshape(cand, -1)
    flat_r = _TENSOR.reshape(_TENSOR.to(ref, device=cand.device), -1)
    flat_s = None
    if floating and slack is not None and tuple(slack.shape) == tuple(ref.shape):
        flat_s = _TENSOR.reshape(_TENSOR.to(slack, device=cand.device), -1)
    total = _Tally()
    for start in range(0, flat_c.numel(), COMPARE_CHUNK):
        stop = start + COMPARE_CHUNK
        piece_s = flat_s[start:stop] if flat_s is not None else None
        total.add(start, flat_c[start:stop], flat_r[start:stop], piece_s, atol, rtol, floating, reach)
    if total.bad_count == 0:
        return Comparison(True, total.max_abs, total.max_rel, strays=total.strays)
    flat, cand_value, ref_value = total.first_bad
    if total.nonfinite:
        total.max_abs = total.max_rel = float("inf")
    return Comparison(
        False,
        total.max_abs,
        total.max_rel,
        bad_count=total.bad_count,
        first_bad_index=list(_unravel(flat, tuple(cand.shape))),
        cand_value=cand_value,
        ref_value=ref_value,
        nonfinite=total.nonfinite,
    )


@dataclass
class _Tally:
    """:func:`compare`'s statistics over the pieces seen so far."""

    max_abs: float = 0.0
    max_rel: float = 0.0
    bad_count: int = 0
    #: (flat index, candidate value, reference value) of the first element out of tolerance
    first_bad: tuple[int, float, float] = (0, 0.0, 0.0)
    nonfinite: bool = False
    #: finite elements beyond the bound but within ``reach`` of it
    strays: int = 0

    def add(
        self,
        offset: int,
        cand: torch.Tensor,
        ref: torch.Tensor,
        slack: torch.Tensor | None,
        atol: float,
        rtol: float,
        floating: bool,
        reach: float = 0.0,
    ) -> None:
        """Count one piece (flat, starting at element ``offset``) of the two outputs; an element
        beyond the bound by at most ``reach`` (both sides finite) is a stray, not a bad one."""
        c = _TENSOR.to(cand, torch.float64)
        r = _TENSOR.to(ref, torch.float64)
        finite_r = torch.isfinite(r)
        finite_c = torch.isfinite(c)
        diff = (c - r).abs()
        if floating:
            bound = atol + rtol * r.abs()
            if slack is not None:
                bound = bound + _TENSOR.to(slack, torch.float64)
        else:
            bound = torch.zeros_like(r)  # integers and booleans (counts, indices, masks) are exact
        within = diff <= bound
        same_special = (c == r) | (torch.isnan(c) & torch.isnan(r))
        both = finite_r & finite_c
        if floating and reach > 0.0:
            stray = (diff <= bound + reach) & ~within & both
            self.strays += int(stray.sum())
            within = within | stray
        good = torch.where(finite_r, within & finite_c, same_special)
        if bool(both.any()):
            d = torch.where(both, diff, torch.zeros_like(diff))
            self.max_abs = max(self.max_abs, float(d.max()))
            rel = d / (r.abs() + max(atol, 1e-12))
            self.max_rel = max(self.max_rel, float(torch.where(both, rel, torch.zeros_like(rel)).max()))
        bad = ~good
        count = int(bad.sum())
        if count == 0:
            return
        if self.bad_count == 0:
            at = int(torch.nonzero(bad)[0, 0])
            self.first_bad = (offset + at, float(c[at]), float(r[at]))
        self.bad_count += count
        # a finite reference element where the candidate's is not is out of tolerance: it is in a bad piece
        self.nonfinite = self.nonfinite or bool((finite_r & ~finite_c).any())


def _unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    index = []
    for size in reversed(shape):
        index.append(flat % size if size else 0)
        flat = flat // size if size else 0
    return tuple(reversed(index))


def outputs_close(a: Any, b: Any, atol: float, rtol: float, slack: list[torch.Tensor | None] | None = None) -> bool:
    """Whether two outputs (tensors or sequences of tensors) agree within tolerance.

    ``slack`` holds one entry per tensor of ``b`` in depth-first order (see :func:`precision_slack`).
    """
    return _close(a, b, atol, rtol, iter(slack) if slack is not None else None)


def _close(a: Any, b: Any, atol: float, rtol: float, slacks: Iterator[torch.Tensor | None] | None) -> bool:
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_close(x, y, atol, rtol, slacks) for x, y in zip(a, b, strict=False))
    if a is None or b is None:
        return a is None and b is None
    a, b = _as_tensor(a), _as_tensor(b)
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
        return False
    if a.shape != b.shape:
        return False
    slack = next(slacks, None) if slacks is not None else None
    return quick_close(a, b, atol, rtol, slack) or compare(a, b, atol, rtol, slack).ok


#: floating dtypes whose values float32 holds exactly (the screen below computes in float32)
_SCREEN_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
#: the screen's bound is shrunk by this factor, far more than float32 can round the difference
#: and the bound (a few units of 2**-24 each), so whatever it accepts the float64 check accepts
_SCREEN_MARGIN = 1.0 - 2.0**-16
#: tolerances outside this range could underflow or overflow in float32: left to the full check
_SCREEN_TOL_RANGE = (1e-30, 1e30)


def quick_close(
    cand: torch.Tensor, ref: torch.Tensor, atol: float, rtol: float, slack: torch.Tensor | None = None
) -> bool:
    """A cheap sufficient test for ``compare(cand, ref, atol, rtol, slack).ok``.

    Where the float32 screen applies (float32 / float16 / bfloat16 outputs of one dtype, a
    tolerance float32 can hold) it computes in float32 with a slightly tighter bound (about half
    the memory traffic of the float64 check, and none of its error statistics); elsewhere
    (integers, exact tolerances, float64) it checks that the outputs are equal element for
    element, which the float64 check always accepts. Either goes :data:`COMPARE_CHUNK` elements
    at a time and waits for the device once, at the end. True means every element is close and
    the reference is finite everywhere; False means nothing: the caller runs :func:`compare`.
    """
    if cand.dtype != ref.dtype or cand.device != ref.device or cand.numel() == 0:
        return False
    if slack is not None and (tuple(slack.shape) != tuple(ref.shape) or slack.device != ref.device):
        return False
    low, high = _SCREEN_TOL_RANGE
    screen = ref.dtype in _SCREEN_DTYPES and low <= atol <= high and 0.0 <= rtol <= high
    if not screen and (slack is not None or atol < 0.0 or rtol < 0.0 or _TENSOR.is_complex(ref)):
        return False
    flat_c = _TENSOR.reshape(_TENSOR.detach(cand), -1)
    flat_r = _TENSOR.reshape(_TENSOR.detach(ref), -1)
    flat_s = _TENSOR.reshape(slack, -1) if slack is not None else None
    floating = _TENSOR.is_floating_point(ref)
    bad = torch.zeros((), dtype=torch.bool, device=ref.device)
    for start in range(0, flat_c.numel(), COMPARE_CHUNK):
        stop = start + COMPARE_CHUNK
        if screen:
            c = _TENSOR.to(flat_c[start:stop], torch.float32)
            r = _TENSOR.to(flat_r[start:stop], torch.float32)
            bound = r.abs().mul_(rtol).add_(atol)
            if flat_s is not None:
                bound.add_(_TENSOR.to(flat_s[start:stop], torch.float32))
            # An infinite reference makes the bound infinite: such elements need the exact check.
            within = (c - r).abs_().le_(bound.mul_(_SCREEN_MARGIN)).logical_and_(torch.isfinite(r))
        else:
            c, r = flat_c[start:stop], flat_r[start:stop]
            within = torch.eq(c, r)
            if floating:
                within.logical_and_(torch.isfinite(r))
        bad.logical_or_(within.logical_not_().any())
    return not bool(bad)


#: dtypes whose PyTorch reference carries a rounding error worth allowing for
LOW_PRECISION = (torch.float16, torch.bfloat16)


def has_low_precision(value: Any) -> bool:
    """Whether any tensor in an output is float16 / bfloat16."""
    if isinstance(value, (tuple, list)):
        return any(has_low_precision(v) for v in value)
    return isinstance(value, torch.Tensor) and value.dtype in LOW_PRECISION


def upcast(values: list[Any]) -> list[Any]:
    """The inputs with float16 / bfloat16 tensors as float32 (for the high-precision reference)."""
    return [_TENSOR.float(x) if isinstance(x, torch.Tensor) and x.dtype in LOW_PRECISION else x for x in values]


def precision_slack(ref: Any, ref_hi: Any) -> list[torch.Tensor | None] | None:
    """The reference's own rounding error per output tensor: ``|ref - ref_hi|`` where both are finite.

    ``ref_hi`` is the same model run in float32. A float16 reference rounds every intermediate
    (a matmul's inputs, a softmax's exponentials); on large outputs a few elements then sit
    further than the tolerance from the true value, and a candidate that computes in float32 and
    rounds once is marked wrong at random. The slack widens each element's tolerance by exactly
    that error. One entry per reference tensor in depth-first order (``None``: no slack);
    ``None`` when the structures differ.
    """
    return _finite_gaps(ref, ref_hi, lambda t: t.dtype in LOW_PRECISION)


def rounding_moves(ref: Any, moved: Any) -> list[torch.Tensor | None] | None:
    """``|moved - ref|`` per floating output tensor (float32; ``None`` for others), where both are
    finite: how far the reference moved when its inputs moved a little. ``None`` when the
    structures differ."""
    return _finite_gaps(ref, moved, _TENSOR.is_floating_point)


#: elements per piece of a gap computation: its float64 temporaries take about 100 MB at most
#: (the whole output at once took about 20 times its size: 2.6 GB for a 128 MB bfloat16 output,
#: measured on the CPU)
GAP_CHUNK = 1 << 22


def _finite_gaps(ref: Any, other: Any, wanted: Callable[[torch.Tensor], bool]) -> list[torch.Tensor | None] | None:
    """``|ref - other|`` in float32 per tensor of ``ref`` that ``wanted`` picks (0 where either side
    is not finite; ``None`` for the others), on ``ref``'s device; ``None`` when the structures differ.
    Computed :data:`GAP_CHUNK` elements at a time, in float32 unless a side is float64: a
    subtraction rounds correctly, so the difference of two values float32 holds is the float64
    difference rounded to float32, at half the memory traffic (the judge's plan computes these
    for every varied trial, four times)."""
    try:
        pairs = flatten_outputs(other, ref)
    except OutputCheckError:
        return None
    gaps: list[torch.Tensor | None] = []
    for second, base, _ in pairs:
        if not wanted(base) or tuple(second.shape) != tuple(base.shape):
            gaps.append(None)
            continue
        flat_a = _TENSOR.reshape(base, -1)
        flat_b = _TENSOR.reshape(_TENSOR.to(second, device=base.device), -1)
        err = torch.empty(flat_a.numel(), dtype=torch.float32, device=base.device)
        work = torch.float64 if torch.float64 in (base.dtype, second.dtype) else torch.float32
        for start in range(0, flat_a.numel(), GAP_CHUNK):
            a = _TENSOR.to(flat_a[start : start + GAP_CHUNK], work)
            b = _TENSOR.to(flat_b[start : start + GAP_CHUNK], work)
            gap = (a - b).abs_().masked_fill_(~(torch.isfinite(a) & torch.isfinite(b)), 0.0)
            err[start : start + GAP_CHUNK] = gap
        gaps.append(_TENSOR.reshape(err, base.shape))
    return gaps


#: a slack stored in float16 / bfloat16 is first multiplied by this: rounding to the nearest
#: value of the narrower type then never lowers it (bfloat16 keeps 8 significant bits)
_ROUND_UP = 1.0 + 2.0**-7


def compact_slack(slack: list[torch.Tensor | None], ref: Any) -> list[torch.Tensor | None]:
    """``slack`` (one entry per tensor of the reference output ``ref``) stored small: ``None`` where
    it is zero everywhere (an exact reference: a transpose, a ReLU), in the output's own dtype for a
    float16 / bfloat16 output, rounded up (never below the float32 value, except below the
    narrower type's normal range, by less than its smallest step; clamped to its largest finite
    value, which only tightens). The judge keeps one per trial on the device."""
    try:
        leaves = [leaf for _, leaf, _ in flatten_outputs(ref, ref)]  # the order of the slack's entries
    except OutputCheckError:
        leaves = []
    out: list[torch.Tensor | None] = []
    for i, gap in enumerate(slack):
        leaf = leaves[i] if i < len(leaves) else None
        if gap is None or not bool(_TENSOR.any(gap)):
            out.append(None)
            continue
        if isinstance(leaf, torch.Tensor) and leaf.dtype in LOW_PRECISION and gap.dtype == torch.float32:
            top = torch.finfo(leaf.dtype).max
            gap = _TENSOR.to(_TENSOR.clamp_(gap * _ROUND_UP, max=top), leaf.dtype)
        out.append(gap)
    return out


def _as_tensor(value: Any) -> Any:
    """Python scalars (outputs such as ``loss.item()``) as 0-d tensors; anything else unchanged."""
    return torch.as_tensor(value) if type(value) in SCALAR_TYPES else value


def outputs_identical(a: Any, b: Any) -> bool:
    """Bitwise equality (NaN equals NaN) of two outputs."""
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(outputs_identical(x, y) for x, y in zip(a, b, strict=False))
    if a is None or b is None:
        return a is None and b is None
    a, b = _as_tensor(a), _as_tensor(b)
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
        return False
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if not torch.is_floating_point(a):
        return bool(torch.equal(a, b))
    if a.device == b.device and bool(torch.equal(a, b)):
        return True  # the common case in one pass (equal() is False wherever a NaN is)
    return bool(((a == b) | (torch.isnan(a) & torch.isnan(b))).all())


def all_finite(value: Any) -> bool:
    if isinstance(value, (tuple, list)):
        return all(all_finite(v) for v in value)
    if isinstance(value, torch.Tensor) and (torch.is_floating_point(value) or torch.is_complex(value)):
        return bool(torch.isfinite(value).all())
    return True


def inputs_equal(a: list[Any], b: list[Any]) -> list[int]:
    """Indexes of inputs whose tensors (nested ones too) differ between two input lists (bitwise,
    NaN-aware)."""
    return [i for i, (x, y) in enumerate(zip(a, b, strict=False)) if not _same_tensors(x, y)]


def _same_tensors(x: Any, y: Any) -> bool:
    if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor):
        return outputs_identical(x, y)
    if type(x) in (list, tuple) and type(y) in (list, tuple):
        return len(x) == len(y) and all(_same_tensors(u, v) for u, v in zip(x, y, strict=False))
    if type(x) is dict and type(y) is dict:
        return x.keys() == y.keys() and all(_same_tensors(x[k], y[k]) for k in x)
    return True
