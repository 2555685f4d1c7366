"""Whether memory holds an unchanged copy of an input (a kernel that only copied, and a view or a
conversion that did the task's work).

The recorder taints memory that a PyTorch conversion or rearrangement filled from such a copy,
and the correctness stage refuses an output that is a rearranged view of one.

Imports torch: use only in evaluator children and tests.
"""

from __future__ import annotations

import random
from typing import Any

import torch

from ascend_kernel_gym.evaluation.verbatim_runs import MIN_RUN_BYTES
from ascend_kernel_gym.evaluation.view_cover import gapless, view_of

#: the smallest piece of an input :func:`copied_input_piece` looks for (smaller runs match by chance)
MIN_COPIED_PIECE_BYTES = MIN_RUN_BYTES
#: the most elements of an overlapping view put in address order one by one
MAX_ORDERED_ELEMENTS = 1 << 24
#: slices along the first dimension searched when a whole span is not a run of an input
PIECE_SLICES = 3
#: picks those slices; the operating system's randomness, unknown to the candidate
_SLICE_PICKER = random.SystemRandom()
#: positions tried per input where a piece's first element occurs
MAX_PIECE_CANDIDATES = 32
_WORD_TYPES = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def widened_from(dtype: torch.dtype, candidates: tuple[torch.dtype, ...]) -> list[torch.dtype]:
    """The narrower dtypes of the same kind (floating or integer) ``dtype`` may hold widened values of."""
    size = torch.empty(0, dtype=dtype).element_size()
    return [
        d
        for d in candidates
        if d != dtype
        and d.is_floating_point == dtype.is_floating_point
        and torch.empty(0, dtype=d).element_size() <= size
    ]


def conversion_dtypes(inputs: list[torch.Tensor]) -> tuple[torch.dtype, ...]:
    """The inputs' dtypes and the integer dtypes of their element sizes (the bits of an input)."""
    found: dict[torch.dtype, None] = {}
    for tensor in inputs:
        if tensor.dtype.is_complex or tensor.dtype == torch.bool:
            continue
        found[tensor.dtype] = None
        word = _WORD_TYPES.get(torch.Tensor.element_size(tensor))
        if word is not None:
            found[word] = None
    return tuple(found)


def copied_input_piece(
    tensor: torch.Tensor,
    input_bytes: list[torch.Tensor],
    depth: int = 2,
    as_dtypes: list[torch.dtype] | tuple[torch.dtype, ...] = (),
) -> bool:
    """Whether the memory ``tensor`` spans holds, byte for byte, a run of one of the inputs.

    ``input_bytes`` are uint8 views of the inputs. The span is the storage region from the
    tensor's first to its last element; it is searched for in each input at element-aligned
    positions, starting from the places where its first element occurs, so a kernel's verbatim
    copy of an input (or of a slice of one, anywhere in a larger buffer) is found in a view that
    rearranges it. When the whole span is no such run, up to ``PIECE_SLICES`` slices along the
    first dimension, picked at random, are searched the same way (``depth`` levels down): a
    buffer holding several copied slices of an input is not one run of it. Spans below
    ``MIN_COPIED_PIECE_BYTES`` are not searched. With ``as_dtypes`` the span is searched as it
    is converted to each of those dtypes instead (values cast, in memory order). A view with
    gaps between its elements (a stride that skips values) is also searched as the elements it
    reads, in the order of their addresses (:func:`in_address_order`): a copy of an input with
    other values between its elements reads as that copy.
    """
    if type(tensor) is not torch.Tensor or torch.Tensor.numel(tensor) == 0:
        return False
    if _holds_input_run(tensor, input_bytes, as_dtypes):
        return True
    if tensor.layout == torch.strided and not gapless(view_of(tensor)):
        ordered = in_address_order(tensor)
        others = [b for b in input_bytes if not _same_storage(b, tensor)]
        if ordered is not None and _holds_input_run(ordered, others, as_dtypes):
            return True
    if depth <= 0 or tensor.dim() < 2 or tensor.shape[0] < 2:
        return False
    picks = _SLICE_PICKER.sample(range(tensor.shape[0]), min(PIECE_SLICES, tensor.shape[0]))
    return any(copied_input_piece(torch.Tensor.select(tensor, 0, i), input_bytes, depth - 1, as_dtypes) for i in picks)


def in_address_order(tensor: torch.Tensor) -> torch.Tensor | None:
    """The distinct elements a strided view reads, in the order of their addresses (a contiguous
    1-D tensor; a contiguous view is its own), or None for an overlapping view too large to order."""
    if torch.Tensor.is_contiguous(tensor):
        return torch.Tensor.reshape(tensor, (-1,))
    dims = [
        (stride, d)
        for d, (size, stride) in enumerate(zip(torch.Tensor.size(tensor), torch.Tensor.stride(tensor), strict=True))
        if size > 1
    ]
    picked = tensor
    for stride, d in dims:
        if stride == 0:  # a broadcast dimension reads the same elements again
            picked = torch.Tensor.narrow(picked, d, 0, 1)
    dims = sorted((stride, d) for stride, d in dims if stride != 0)
    reach = 1
    nested = True
    for stride, d in dims:
        if stride < reach:
            nested = False
            break
        reach = stride * torch.Tensor.size(tensor, d)
    if nested:
        order = [d for _, d in reversed(dims)]
        rest = [d for d in range(tensor.dim()) if d not in order]
        flat = torch.Tensor.reshape(torch.Tensor.permute(picked, (*order, *rest)), (-1,))
        return torch.Tensor.contiguous(flat)  # a reshape keeps a strided view where it can
    if torch.Tensor.numel(picked) > MAX_ORDERED_ELEMENTS:
        return None
    view = view_of(picked)
    offsets = torch.unique(view.offsets())
    storage = torch.Tensor.untyped_storage(picked)
    flat = torch.empty(0, dtype=picked.dtype, device=picked.device).set_(
        storage, 0, (storage.nbytes() // view.itemsize,)
    )
    return flat[offsets.to(flat.device)]


def _same_storage(data: torch.Tensor, tensor: torch.Tensor) -> bool:
    return torch.Tensor.untyped_storage(data).data_ptr() == torch.Tensor.untyped_storage(tensor).data_ptr()


def _holds_input_run(
    tensor: torch.Tensor, input_bytes: list[torch.Tensor], as_dtypes: list[torch.dtype] | tuple[torch.dtype, ...]
) -> bool:
    size = torch.Tensor.element_size(tensor)
    if _WORD_TYPES.get(size) is None or any(st < 0 for st in torch.Tensor.stride(tensor)):
        return False
    elements = 1 + sum((n - 1) * st for n, st in zip(tensor.shape, torch.Tensor.stride(tensor), strict=True))
    storage = torch.Tensor.untyped_storage(tensor)
    offset = torch.Tensor.storage_offset(tensor)
    if not as_dtypes:
        if elements * size < MIN_COPIED_PIECE_BYTES:
            return False
        return _found_in_inputs(_storage_bytes(storage, offset * size, elements * size), storage, size, input_bytes)
    span = torch.empty(0, dtype=tensor.dtype, device=tensor.device).set_(storage, offset, (elements,))
    for dtype in as_dtypes:
        target_size = torch.empty(0, dtype=dtype).element_size()
        if elements * target_size < MIN_COPIED_PIECE_BYTES or _WORD_TYPES.get(target_size) is None:
            continue
        try:
            converted = torch.Tensor.to(span, dtype)
        except (RuntimeError, TypeError):
            continue
        if _found_in_inputs(tensor_bytes(converted), storage, target_size, input_bytes):
            return True
    return False


def _found_in_inputs(piece_bytes: torch.Tensor, storage: Any, size: int, input_bytes: list[torch.Tensor]) -> bool:
    """Whether ``piece_bytes`` (read from ``storage``) occur in an input, starting at a multiple of ``size``."""
    word = _WORD_TYPES[size]
    piece = piece_bytes.view(word)
    span = piece_bytes.numel()
    if bool(torch.all(piece == piece[0])):
        return False  # constant memory (zeros, a fill) matches any constant input and carries nothing
    for original in input_bytes:
        if original.device != storage.device or torch.Tensor.numel(original) < span:
            continue
        if torch.Tensor.untyped_storage(original).data_ptr() == storage.data_ptr():
            continue  # a view of the input itself: tainted as the input already
        try:
            whole = original[: torch.Tensor.numel(original) // size * size].view(word)
        except RuntimeError:  # the input's start is not aligned to this element size
            continue
        hits = torch.nonzero(whole == piece[0]).flatten()[:MAX_PIECE_CANDIDATES].tolist()
        for at in hits:
            if at + piece.numel() <= whole.numel() and torch.equal(whole[at : at + piece.numel()], piece):
                return True
    return False


def _storage_bytes(storage: Any, start: int, size: int) -> torch.Tensor:
    return torch.empty(0, dtype=torch.uint8, device=storage.device).set_(storage, start, (size,))


def tensor_bytes(tensor: torch.Tensor) -> torch.Tensor:
    """A uint8 view of a contiguous tensor's memory."""
    start = torch.Tensor.storage_offset(tensor) * torch.Tensor.element_size(tensor)
    size = torch.Tensor.numel(tensor) * torch.Tensor.element_size(tensor)
    return _storage_bytes(torch.Tensor.untyped_storage(tensor), start, size)
