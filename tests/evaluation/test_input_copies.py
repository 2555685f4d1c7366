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
