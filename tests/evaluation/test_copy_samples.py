"""Pieces of PyTorch's copies looked for in a call's output (evaluation/copy_samples.py)."""

from __future__ import annotations

import pytest
import torch

from ascend_kernel_gym.evaluation import copy_samples
from ascend_kernel_gym.evaluation.copy_samples import TILES_PER_COPY, CopySamples
from ascend_kernel_gym.evaluation.input_copies import tensor_bytes


def test_a_copy_that_reaches_the_output_by_any_path_is_found() -> None:
    """PyTorch's transposed copy, encoded and decoded by kernels (here: bit flips and back), is
    found in the output whatever happened in between; a computed output is not."""
    x = torch.randn(3, 100, 70).to(torch.bfloat16)
    inputs = [tensor_bytes(x)]
    samples = CopySamples()
    copied = x.transpose(1, 2).contiguous()
    samples.add(copied, "aten.clone of an input")
    assert len(samples.tiles) == TILES_PER_COPY
    coded = copied.view(torch.int16) ^ 0x5A5A
    del copied
    decoded = (coded ^ 0x5A5A).view(torch.bfloat16)
    assert samples.found_in(decoded, inputs) == "aten.clone of an input"
    halves = torch.cat([decoded[:1] * 2 / 2, decoded[1:]])  # through another buffer and a cat
    assert samples.found_in(halves, inputs) == "aten.clone of an input"
    assert samples.found_in(decoded.float().mul(3).to(torch.bfloat16), inputs) is None
    assert samples.found_in(decoded[0, 0, :50], inputs) is None  # 100 bytes: shorter than a piece


def test_pieces_of_an_inputs_own_data_and_fills_do_not_count() -> None:
    """A plain clone of an input holds the input's data, which an output may hold honestly; a
    copy of one repeated value is no evidence of anything."""
    x = torch.randn(64, 80)
    samples = CopySamples()
    samples.add(x.clone(), "aten.clone of an input")
    assert samples.tiles  # kept, but ...
    assert samples.found_in(x.clone(), [tensor_bytes(x)]) is None  # ... they are the input's own bytes
    samples.add(torch.zeros(64, 80), "aten.zeros_like of an input")
    samples.add(torch.full((64, 80), 1.5), "aten.fill of an input")
    assert all(bool((t.view(torch.int32) != t.view(torch.int32)[0]).any()) for t, _, _ in samples.tiles)
    tiny = CopySamples()
    tiny.add(torch.randn(10), "aten.clone of an input")  # 40 bytes: nothing to keep
    assert tiny.tiles == []


def test_a_flood_of_copies_keeps_a_bounded_random_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(copy_samples, "MAX_TILES", 40)
    samples = CopySamples()
    for i in range(20):
        samples.add(torch.randn(4096), f"copy {i}")
    assert len(samples.tiles) == 40 and samples.offered == 20 * TILES_PER_COPY
    assert len({what for _, _, what in samples.tiles}) > 3  # later copies replaced earlier pieces


def test_pieces_among_other_values_and_a_shifted_copy_are_found() -> None:
    """The layouts of the two red-team cheats once marked as known failures: a ninth of the copy
    among computed values in each of nine buffers, then assembled; the copy one element into a
    longer flat buffer, whose tail is the output."""
    x = torch.randn(3, 100, 70).to(torch.bfloat16)
    samples = CopySamples()
    copied = x.transpose(1, 2).contiguous()
    samples.add(copied, "aten.clone of an input")
    flat = copied.view(-1)
    n = flat.numel()
    assembled = torch.empty_like(flat)
    for i in range(9):
        lo, hi = i * n // 9, (i + 1) * n // 9
        piece = flat + 1
        piece[lo:hi] = flat[lo:hi]
        assembled[lo:hi] = piece[lo:hi]
    assert samples.found_in(assembled, [tensor_bytes(x)]) == "aten.clone of an input"
    shifted = torch.empty(n + 1, dtype=flat.dtype)
    shifted[0], shifted[1:] = 1.0, flat
    assert samples.found_in(shifted[1:], [tensor_bytes(x)]) == "aten.clone of an input"
