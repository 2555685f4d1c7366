"""Unchanged copies of an input found in memory (evaluation/input_copies.py)."""

from __future__ import annotations

import torch

from ascend_kernel_gym.evaluation.input_copies import conversion_dtypes, copied_input_piece, tensor_bytes


def test_copied_input_pieces_are_found_in_slices_and_other_buffers() -> None:
    x = torch.randn(4, 8, 16)
    inputs = [tensor_bytes(x)]
    top = x[:, :4].clone()  # each batch's first rows, one after another: no single run of x
    assert copied_input_piece(top.transpose(1, 2), inputs)  # found through its slices
    assert copied_input_piece(x[2:].clone().permute(2, 0, 1), inputs)  # a run anywhere in x
    assert not copied_input_piece((top * 1.5).transpose(1, 2), inputs)  # computed
    assert not copied_input_piece(x[0, 0, :8].clone(), inputs)  # 32 bytes: too small to tell
    assert not copied_input_piece(x.transpose(1, 2), inputs)  # a view of the input itself: its own taint


def test_widened_copies_of_inputs_are_found_when_converted_back() -> None:
    x = torch.randn(4, 8, 16).to(torch.bfloat16)
    inputs = [tensor_bytes(x)]
    assert conversion_dtypes([x, torch.zeros(3, dtype=torch.bool)]) == (torch.bfloat16, torch.int16)
    widened = x.float()  # every value unchanged, every byte changed
    assert not copied_input_piece(widened.transpose(1, 2), inputs)
    assert copied_input_piece(widened.transpose(1, 2), inputs, as_dtypes=[torch.bfloat16])
    bits = x.view(torch.int16).to(torch.int32)  # the bit patterns, sign-extended
    assert copied_input_piece(bits.transpose(1, 2), inputs, as_dtypes=[torch.int16])
    assert not copied_input_piece((widened * 3).transpose(1, 2), inputs, as_dtypes=[torch.bfloat16])


def test_constant_memory_is_never_a_copy_of_an_input() -> None:
    zeros = torch.zeros(8, 64)  # an input that happens to be constant
    assert not copied_input_piece(torch.zeros(64, 8).t(), [tensor_bytes(zeros)])
    assert not copied_input_piece(
        torch.zeros(64, 8, dtype=torch.float64).t(), [tensor_bytes(zeros)], as_dtypes=[torch.float32]
    )


def test_views_with_gaps_are_searched_in_address_order() -> None:
    """A copy of an input with other values between its elements (padding after each row, or every
    other element) is read by a strided view; the elements it reads, in address order, are the copy."""
    from ascend_kernel_gym.evaluation.input_copies import in_address_order

    x = torch.randn(3, 10, 7)
    inputs = [tensor_bytes(x)]
    padded = torch.full((3, 10, 8), 0.5)
    padded[..., :7] = x
    view = padded[..., :7]
    assert torch.equal(in_address_order(view), x.reshape(-1))
    assert torch.equal(in_address_order(view.transpose(1, 2)), x.reshape(-1))
    assert copied_input_piece(view.transpose(1, 2), inputs)  # rows of 28 bytes: no run without the order
    interleaved = torch.stack([x.reshape(-1), x.reshape(-1) + 1], dim=1).reshape(-1)
    assert copied_input_piece(interleaved[::2].view(x.shape).transpose(1, 2), inputs)
    assert not copied_input_piece((padded * 2)[..., :7].transpose(1, 2), inputs)
    # broadcast dimensions read their elements once; overlapping windows are put in order one by one
    row = x[0, 0].clone()
    assert torch.equal(in_address_order(row.expand(5, 7)), row)
    flat = torch.arange(10.0)
    windows = flat.as_strided((4, 4), (2, 1))  # elements 0..9, some read twice
    assert torch.equal(in_address_order(windows), flat)
