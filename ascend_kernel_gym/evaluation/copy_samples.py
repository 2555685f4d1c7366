"""Pieces of the data PyTorch copied during a candidate's call, looked for in its output.

The recorder's taint follows PyTorch's copies of input data through PyTorch's operators and
through kernels that copy them verbatim. Two kernels that encode and decode the data (an XOR
with a constant and back, a doubling and a halving) hand PyTorch's copy on with no verbatim step
in between (red team of 2026-12-05, ``launder_xor_roundtrip``). What counts is what lands in the
output, by whatever path: when PyTorch writes a copy that rearranges tainted data,
:class:`CopySamples` keeps :data:`TILES_PER_COPY` pieces of it, :data:`TILE_BYTES` bytes each, at
places the operating system's randomness picks; once the call has returned, each output is
searched for them (:class:`.verbatim_runs.RunIndex`, the output keyed once). A piece that is an
unchanged run of an input is no evidence (an output may hold its input's data: a concatenation,
an identity on some trial), and neither is a piece of one repeated value. Copies that only convert leave no pieces
(the recorder does not offer them): an honest elementwise kernel after a PyTorch upcast writes
long runs of the upcast copy wherever it is the identity (ReLU on positive values).

At most :data:`MAX_TILES` pieces are kept per call; past that, each new piece replaces a kept one
at random (a reservoir sample), so a flood of copies of junk dilutes the sample but never stops it.

Imports torch: use only in evaluator children and tests.
"""

from __future__ import annotations

import random

import torch

from ascend_kernel_gym.evaluation.verbatim_runs import MIN_RUN_BYTES, WORD_TYPES, RunIndex, holds_run
from ascend_kernel_gym.evaluation.view_cover import view_of

#: pieces kept of each copy
TILES_PER_COPY = 16
#: bytes of one piece: the shortest run the search always finds
TILE_BYTES = MIN_RUN_BYTES
#: pieces kept per call (256 B each: 4 MiB)
MAX_TILES = 16384


class CopySamples:
    """Pieces of one call's PyTorch copies (see the module docstring)."""

    def __init__(self) -> None:
        #: (piece, its element size, what the copy was)
        self.tiles: list[tuple[torch.Tensor, int, str]] = []
        self.offered = 0
        self._pick = random.SystemRandom()

    def add(self, tensor: torch.Tensor, what: str) -> None:
        """Keep pieces of the data ``tensor``'s view spans (just written by a PyTorch copy)."""
        if type(tensor) is not torch.Tensor or tensor.layout != torch.strided or tensor.device.type == "meta":
            return
        size = torch.Tensor.element_size(tensor)
        if size not in WORD_TYPES:
            return
        start, end = view_of(tensor).byte_span()
        if end - start < TILE_BYTES:
            return
        storage = torch.Tensor.untyped_storage(tensor)
        data = torch.empty(0, dtype=torch.uint8, device=tensor.device).set_(storage, 0, (storage.nbytes(),))
        places = (end - start - TILE_BYTES) // size + 1
        for _ in range(min(TILES_PER_COPY, places)):
            at = start + self._pick.randrange(places) * size
            tile = data[at : at + TILE_BYTES].clone()
            words = tile.view(WORD_TYPES[size])
            if bool(torch.all(words == words[0])):
                continue  # one repeated value: matches any fill
            self._keep((tile, size, what))

    def _keep(self, item: tuple[torch.Tensor, int, str]) -> None:
        self.offered += 1
        if len(self.tiles) < MAX_TILES:
            self.tiles.append(item)
            return
        slot = self._pick.randrange(self.offered)
        if slot < MAX_TILES:
            self.tiles[slot] = item

    def found_in(self, output: torch.Tensor, input_bytes: list[torch.Tensor]) -> str | None:
        """What copy a kept piece found in ``output``'s span came from, or None.

        Pieces that are unchanged runs of an input (``input_bytes``) do not count.
        """
        if not self.tiles or type(output) is not torch.Tensor or output.layout != torch.strided:
            return None
        start, end = view_of(output).byte_span()
        if end - start < TILE_BYTES:
            return None
        storage = torch.Tensor.untyped_storage(output)
        region = torch.empty(0, dtype=torch.uint8, device=output.device).set_(storage, start, (end - start,))
        for size in sorted({size for _, size, _ in self.tiles}):
            kept = [(t, what) for t, t_size, what in self.tiles if t_size == size and t.device == region.device]
            if not kept:
                continue
            index = RunIndex(region, size)
            if index.find([torch.cat([tile for tile, _ in kept])]) is None:
                continue
            # Something matched: which pieces, leaving out those that are an input's own data.
            for tile, what in kept:
                if index.find([tile]) is not None and not holds_run(tile, input_bytes, size):
                    return what
        return None
