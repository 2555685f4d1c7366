"""Whether one piece of memory holds a verbatim run of another anywhere in it.

:func:`.input_copies.copied_input_piece` asks whether a span *as a whole* is a run of an input. An
output that holds PyTorch's copy among other values (a value in front, pieces with other values
around them) is no such span; :mod:`.copy_samples` looks for pieces of PyTorch's copies in the
output with this module (red team of 2026-12-05: ``launder_shifted_flat_buffer``,
``launder_pieces_kernel_assembled``, and copies encoded and decoded by kernels).
:func:`holds_run` finds a run of at least :data:`MIN_RUN_BYTES` of a source anywhere in a region,
at any byte offset of the region against any element offset of the source:

- the region is cut into windows of ``2w`` words every ``w`` words (a word: the element size
  asked for), at each byte phase ``0 .. size-1``; with ``3w - 1`` words at most
  :data:`MIN_RUN_BYTES`, every run that long holds one whole window;
- every window of the same length of the source, at every word offset, is keyed the same way:
  two sums over the window of a secret hash of each pair of neighbouring words (the process's
  own random multipliers, so a candidate cannot make unequal windows collide on purpose, and
  pairs so that a window's words in another order key differently), from running sums, so the
  source costs a few passes over its words;
- source keys found among the region's keys are compared byte for byte (a key says nothing by
  itself); windows of one repeated word are never keys (a fill matches any other fill).

Both sides are processed in chunks of :data:`CHUNK_WORDS` words, so the scratch memory stays
bounded whatever their size. Imports torch: use only in evaluator children and tests.
"""

from __future__ import annotations

import random

import torch

#: the shortest run :func:`holds_run` always finds (shorter runs, from ``2w`` words up, only
#: where one whole window falls inside them); shorter runs match by chance
MIN_RUN_BYTES = 256
#: words hashed at once (bounds the scratch memory: a few int64 arrays of this length)
CHUNK_WORDS = 1 << 20
#: candidate matches compared at once
VERIFY_BATCH = 4096
#: candidate matches compared in all before giving up (only hash collisions fail a comparison)
MAX_VERIFIED = 1 << 16
WORD_TYPES = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}

_PICK = random.SystemRandom()
#: a multiplier for each 16-bit part of a word; then, per sum, one for each word of a pair
_WORD_MULTIPLIERS = [_PICK.randrange(1 << 30, 1 << 31) | 1 for _ in range(4)]
_PAIR_MULTIPLIERS = [[_PICK.randrange(1 << 30, 1 << 31) | 1 for _ in range(2)] for _ in range(2)]
_WORD_BITS = 20
_PAIR_BITS = 18
#: a window's two sums go side by side in one int64 key
_KEY_SHIFT = 26


def window_words(size: int) -> tuple[int, int]:
    """``(w, 2w)``: the region's window stride and the window length, in words of ``size`` bytes."""
    need = -(-MIN_RUN_BYTES // size)
    stride = max(1, (need + 1) // 3)
    return stride, 2 * stride


def holds_run(region: torch.Tensor, sources: list[torch.Tensor], size: int) -> bool:
    """Whether the bytes ``region`` (uint8, 1-D) hold a verbatim run of one of ``sources`` (uint8,
    1-D, read in words of ``size`` bytes from their start) of :data:`MIN_RUN_BYTES` or more.

    Sources on another device than the region, or shorter than one window, are skipped.
    """
    return RunIndex(region, size).find(sources) is not None


class RunIndex:
    """A region's windows, keyed once, to look for runs of one source after another in (the
    search of :func:`holds_run`: the region's keys are the costly part, the sources' are hashed
    per :meth:`find`)."""

    def __init__(self, region: torch.Tensor, size: int) -> None:
        if size not in WORD_TYPES:
            raise ValueError(f"a word is 1, 2, 4 or 8 bytes, not {size}")
        self.region = region
        self.size = size
        self.stride, self.length = window_words(size)
        if region.numel() < self.length * size:
            keys = places = torch.empty(0, dtype=torch.int64, device=region.device)
        else:
            keys, places = _region_keys(region, size, self.stride, self.length)
        self._keys, order = torch.sort(keys)
        self._places = places[order]

    def find(self, sources: list[torch.Tensor]) -> int | None:
        """The index in ``sources`` of the first one with a run in the region, or None."""
        keys, places, size, length = self._keys, self._places, self.size, self.length
        if keys.numel() == 0:
            return None
        verified = 0
        for index, source in enumerate(sources):
            if source.device != self.region.device or source.numel() < length * size:
                continue
            count = source.numel() // size - length + 1
            for first in range(0, count, CHUNK_WORDS):
                words = _words(source, first * size, min(CHUNK_WORDS, count - first) + length - 1, size)
                found = _window_keys(words, 1, length)
                at = torch.searchsorted(keys, found).clamp_(max=keys.numel() - 1)
                hits = torch.nonzero(keys[at] == found).flatten()
                if hits.numel() == 0:
                    continue
                starts = (hits + first) * size  # byte offsets of the matching source windows
                regions = places[at[hits]]  # byte offsets of the region's windows with the same key
                for lo in range(0, hits.numel(), VERIFY_BATCH):
                    if verified >= MAX_VERIFIED:
                        return None
                    batch = slice(lo, lo + VERIFY_BATCH)
                    verified += int(starts[batch].numel())
                    if _any_equal(self.region, regions[batch], source, starts[batch], length * size):
                        return index
        return None


def _region_keys(region: torch.Tensor, size: int, stride: int, length: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Keys of the region's windows that are not one repeated word, and their byte offsets."""
    keys: list[torch.Tensor] = []
    places: list[torch.Tensor] = []
    per_chunk = max(1, CHUNK_WORDS // stride)
    for phase in range(size):
        n = (region.numel() - phase) // size
        if n < length:
            continue
        count = (n - length) // stride + 1
        for first in range(0, count, per_chunk):
            number = min(per_chunk, count - first)
            words = _words(region, phase + first * stride * size, (number - 1) * stride + length, size)
            windows = words.unfold(0, length, stride)
            varied = ~(windows == windows[:, :1]).all(dim=1)
            index = torch.arange(first, first + number, device=region.device)[varied]
            keys.append(_window_keys(words, stride, length)[varied])
            places.append(index * (stride * size) + phase)
    if not keys:
        empty = torch.empty(0, dtype=torch.int64, device=region.device)
        return empty, empty
    return torch.cat(keys), torch.cat(places)


def _words(data: torch.Tensor, start: int, count: int, size: int) -> torch.Tensor:
    """``count`` words of ``size`` bytes of the bytes ``data`` from byte ``start`` (copied when
    they do not start on a word boundary of the storage)."""
    piece = data[start : start + count * size]
    if torch.Tensor.storage_offset(piece) % size:
        piece = piece.clone()
    return piece.view(WORD_TYPES[size])


def _window_keys(words: torch.Tensor, stride: int, length: int) -> torch.Tensor:
    """Keys of the windows of ``length`` words of ``words`` starting at ``0, stride, 2 * stride, ...``."""
    count = (words.numel() - length) // stride + 1
    mixed = _mix_words(words.to(torch.int64), words.element_size())
    sums = []
    begin = torch.arange(0, count * stride, stride, device=words.device)
    for k1, k2 in _PAIR_MULTIPLIERS:
        pairs = torch.bitwise_xor(mixed[:-1] * k1, mixed[1:] * k2).bitwise_right_shift_(_WORD_BITS)
        pairs.bitwise_and_((1 << _PAIR_BITS) - 1)
        running = torch.zeros(pairs.numel() + 1, dtype=torch.int64, device=words.device)
        torch.cumsum(pairs, 0, out=running[1:])
        sums.append(running[begin + length - 1] - running[begin])
    return sums[0].bitwise_left_shift_(_KEY_SHIFT).add_(sums[1])


def _mix_words(words: torch.Tensor, size: int) -> torch.Tensor:
    """A secret hash of each word into :data:`_WORD_BITS` bits (int64 arithmetic that cannot overflow)."""
    mixed = torch.zeros_like(words)
    for part in range(max(1, size // 2)):
        piece = words.bitwise_right_shift(16 * part).bitwise_and_(0xFFFF)
        mixed.add_(piece.mul_(_WORD_MULTIPLIERS[part]))
    return mixed.bitwise_right_shift_(14).bitwise_and_((1 << _WORD_BITS) - 1)


def _any_equal(
    region: torch.Tensor, region_at: torch.Tensor, source: torch.Tensor, source_at: torch.Tensor, nbytes: int
) -> bool:
    """Whether any of the ``nbytes``-long pieces of ``region`` and ``source`` at the given byte
    offsets (pairwise) are equal."""
    step = torch.arange(nbytes, device=region.device)
    left = region[region_at.unsqueeze(1) + step]
    right = source[source_at.unsqueeze(1) + step]
    return bool((left == right).all(dim=1).any())
