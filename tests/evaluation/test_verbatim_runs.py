"""Runs of one piece of memory found anywhere in another (evaluation/verbatim_runs.py)."""

from __future__ import annotations

import pytest
import torch

from ascend_kernel_gym.evaluation import verbatim_runs
from ascend_kernel_gym.evaluation.verbatim_runs import MIN_RUN_BYTES, holds_run, window_words

DTYPES = {1: torch.uint8, 2: torch.bfloat16, 4: torch.float32, 8: torch.float64}


def _bytes(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.contiguous().view(-1).view(torch.uint8)


def _random(count: int, size: int, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    if size == 1:
        return torch.randint(0, 256, (count,), dtype=torch.uint8, generator=generator)
    return torch.randn(count, generator=generator).to(DTYPES[size])


@pytest.mark.parametrize("size", [1, 2, 4, 8])
def test_every_run_of_the_least_length_is_found_wherever_it_lies(size: int) -> None:
    """A run of MIN_RUN_BYTES at any word offset of the region, from any word offset of the source."""
    source = _random(4096, size, 0)
    need = MIN_RUN_BYTES // size
    stride, _ = window_words(size)
    for at in range(stride + 1):
        region = _random(2048, size, 1 + at)
        start = 700 + 3 * at
        region[100 + at : 100 + at + need] = source[start : start + need]
        assert holds_run(_bytes(region), [_bytes(source)], size), (size, at)


@pytest.mark.parametrize("size", [1, 2, 4, 8])
def test_shorter_runs_and_computed_values_are_not_found(size: int) -> None:
    source = _random(4096, size, 0)
    _, length = window_words(size)
    region = _random(2048, size, 9)
    region[100 : 100 + length - 1] = source[500 : 500 + length - 1]  # one word short of a window
    assert not holds_run(_bytes(region), [_bytes(source)], size)
    if size > 1:
        computed = source.to(torch.float64).mul(1.5).to(source.dtype)
        assert not holds_run(_bytes(computed), [_bytes(source)], size)


def test_a_copy_shifted_by_any_byte_is_found() -> None:
    """A kernel may write the bytes one byte off their words (phases 0 .. size-1 of the region)."""
    source = torch.randn(512)
    for shift in range(1, 5):
        region = torch.zeros(512 * 4 + 8, dtype=torch.uint8)
        region[shift : shift + 512 * 4] = _bytes(source)
        assert holds_run(region, [_bytes(source)], 4), shift


def test_pieces_among_other_values_and_a_value_in_front_are_found() -> None:
    """The red team's two layouts: a ninth of the copy among computed values; the copy one element in."""
    source = torch.randn(3, 70, 100).to(torch.bfloat16).contiguous().view(-1)
    n = source.numel()
    piece = source + 1
    piece[4 * n // 9 : 5 * n // 9] = source[4 * n // 9 : 5 * n // 9]
    assert holds_run(_bytes(piece), [_bytes(source)], 2)
    shifted = torch.empty(n + 1, dtype=source.dtype)
    shifted[0], shifted[1:] = 1.0, source
    assert holds_run(_bytes(shifted), [_bytes(source)], 2)


def test_the_same_values_in_another_order_and_fills_are_not_runs() -> None:
    """Keys hash neighbouring pairs, so a reordered window is no candidate; a fill matches no fill."""
    source = torch.randn(1024)
    _, length = window_words(4)
    region = torch.randn(1024)
    region[200 : 200 + length] = source[300 : 300 + length].flip(0)
    assert not holds_run(_bytes(region), [_bytes(source)], 4)
    assert not holds_run(_bytes(torch.zeros(1024)), [_bytes(torch.zeros(4096))], 4)
    assert not holds_run(_bytes(torch.full((1024,), 2.5)), [_bytes(torch.full((64,), 2.5))], 4)


def test_runs_across_chunk_boundaries_are_found(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both sides are hashed in chunks; a run that straddles them is still one."""
    monkeypatch.setattr(verbatim_runs, "CHUNK_WORDS", 50)
    source = torch.randn(2000)
    for at in (0, 37, 49, 50, 51, 990):
        region = torch.randn(1200)
        region[at : at + 64] = source[1200 - at : 1264 - at]
        assert holds_run(_bytes(region), [_bytes(source)], 4), at


def test_a_flood_of_equal_keys_is_verified_and_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Verification stops after MAX_VERIFIED candidates that failed (only collisions fail), so
    nothing unbounded runs; a real run among them is found in the first batch it is in."""
    source = torch.randn(64).repeat(40)  # one 256-byte pattern, forty times: many equal windows
    region = torch.randn(512)
    region[100:164] = source[:64]
    assert holds_run(_bytes(region), [_bytes(source)], 4)
    monkeypatch.setattr(verbatim_runs, "MAX_VERIFIED", 0)
    assert not holds_run(_bytes(region), [_bytes(source)], 4)


def test_bad_word_sizes_are_refused_and_short_memory_is_no_run() -> None:
    with pytest.raises(ValueError, match="1, 2, 4 or 8"):
        holds_run(torch.zeros(8, dtype=torch.uint8), [], 3)
    tiny = _bytes(torch.randn(8))
    assert not holds_run(tiny, [tiny], 4)
    assert not holds_run(_bytes(torch.randn(1024)), [], 4)
