"""Which bytes of a storage a tensor view reaches, and whether one view's elements cover another's.

The recorder keeps what PyTorch filled or copied during a candidate's call per view, not per
allocation: a kernel's output may share one allocation with a scratch area that PyTorch zeroed
or with a staging copy of an input, and only what lands on the output's own elements decides.
Geometry is read through ``torch.Tensor`` (no method of the candidate's tensor runs).

Imports torch: use only in evaluator children and tests.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

import torch

#: the most elements compared one by one (beyond it an overlap that is neither disjoint nor an
#: obvious cover counts as partial: the conservative answer)
MAX_COMPARED_ELEMENTS = 1 << 24

Cover = Literal["covers", "disjoint", "partial"]


class View(NamedTuple):
    """A view's place in its storage: element offset, sizes, strides (elements), element bytes."""

    offset: int
    sizes: tuple[int, ...]
    strides: tuple[int, ...]
    itemsize: int

    @property
    def numel(self) -> int:
        count = 1
        for size in self.sizes:
            count *= size
        return count

    def byte_span(self) -> tuple[int, int]:
        """``[start, end)`` in bytes from the storage's start (empty for a view without elements)."""
        start = self.offset * self.itemsize
        if self.numel == 0:
            return start, start
        last = sum((size - 1) * stride for size, stride in zip(self.sizes, self.strides, strict=True))
        return start, start + (last + 1) * self.itemsize

    def offsets(self) -> torch.Tensor:
        """The element offsets of every element (int64, row-major order)."""
        result = torch.full((), self.offset, dtype=torch.int64)
        for size, stride in zip(self.sizes, self.strides, strict=True):
            result = result.unsqueeze(-1) + torch.arange(size, dtype=torch.int64) * stride
        return result.reshape(-1)


def view_of(tensor: torch.Tensor) -> View:
    """The geometry of ``tensor`` (a strided tensor)."""
    return View(
        int(torch.Tensor.storage_offset(tensor)),
        tuple(int(s) for s in torch.Tensor.size(tensor)),
        tuple(int(s) for s in torch.Tensor.stride(tensor)),
        int(torch.Tensor.element_size(tensor)),
    )


def spans_meet(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def cover(outer: View, inner: View) -> Cover:
    """Whether ``outer``'s elements include every byte of ``inner``'s (``covers``), none
    (``disjoint``), or some (``partial``); both are views of one storage."""
    outer_span, inner_span = outer.byte_span(), inner.byte_span()
    if inner_span[0] == inner_span[1] or not spans_meet(outer_span, inner_span):
        return "disjoint"
    if outer_span[0] <= inner_span[0] and inner_span[1] <= outer_span[1] and gapless(outer):
        return "covers"
    if outer.itemsize != inner.itemsize or outer_span[0] % outer.itemsize != inner_span[0] % inner.itemsize:
        return "partial"  # elements of different sizes or alignments: no element-wise answer
    if outer.numel > MAX_COMPARED_ELEMENTS or inner.numel > MAX_COMPARED_ELEMENTS:
        return "partial"
    low = min(outer.offset, inner.offset)
    high = max(outer_span[1], inner_span[1]) // outer.itemsize
    marked = torch.zeros(high - low, dtype=torch.bool)
    marked[outer.offsets() - low] = True
    hit = marked[inner.offsets() - low]
    if bool(hit.all()):
        return "covers"
    return "partial" if bool(hit.any()) else "disjoint"


def gapless(view: View) -> bool:
    """Every byte of the view's span belongs to an element (a contiguous or permuted dense view)."""
    start, end = view.byte_span()
    if end - start != view.numel * view.itemsize:
        return False
    # the dimensions nest without overlap (no element reached twice): as many elements as bytes
    dims = sorted((stride, size) for size, stride in zip(view.sizes, view.strides, strict=True) if size > 1)
    reach = 1  # elements spanned by the dimensions so far
    for stride, size in dims:
        if stride < reach:
            return False
        reach = stride * size
    return True


def covers_storage(tensor: torch.Tensor) -> bool:
    """Whether ``tensor``'s view reaches every byte of its storage, each once (a whole allocation)."""
    view = view_of(tensor)
    return view.byte_span() == (0, torch.Tensor.untyped_storage(tensor).nbytes()) and gapless(view)
