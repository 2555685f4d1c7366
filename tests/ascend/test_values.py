"""Abstract values: constants, broadcasting, Triton-like dtype promotion, constant folding."""

from __future__ import annotations

import ast

from ascend_kernel_gym.ascend.values import (
    UNKNOWN,
    Val,
    broadcast,
    const_val,
    fold,
    promote,
    replace_val,
    tensor_dtype,
)


def test_constants_get_the_dtype_triton_gives_them() -> None:
    assert const_val(True).dtype == "int1"
    assert const_val(2**31 - 1).dtype == "int32" and const_val(2**31).dtype == "int64"
    assert const_val(-(2**31)).dtype == "int32" and const_val(-(2**31) - 1).dtype == "int64"
    assert const_val(1.5).dtype == "fp32"
    pair = const_val((1, 2.0))
    assert pair.const == (1, 2.0) and [i.dtype for i in pair.items] == ["int32", "fp32"]


def test_val_sizes() -> None:
    tile = Val(shape=(64, 32), dtype="fp16")
    assert tile.is_tensor and tile.numel == 2048 and tile.nbytes == 4096
    assert Val(shape=(None, 32), dtype="fp16").nbytes is None
    assert Val(shape=(8,), dtype="fp32", ptr=True).nbytes is None  # pointers occupy no tile
    assert not Val(dtype="fp32").is_tensor and Val().numel == 1
    changed = replace_val(tile, dtype="fp32", loaded=True)
    assert changed.nbytes == 8192 and changed.loaded and tile.dtype == "fp16" and not tile.loaded


def test_broadcast() -> None:
    assert broadcast((128,), (1, 128)) == (1, 128)
    assert broadcast((64, 1), (1, 32)) == (64, 32)
    assert broadcast((None, 1), (1, 32)) == (None, 32)
    assert broadcast(None, ()) is None
    assert broadcast((16,), None) == (16,)


def test_promotion_treats_python_literals_as_weakly_typed() -> None:
    fp16_tile = Val(shape=(8,), dtype="fp16")
    assert promote(fp16_tile, const_val(2.0)) == "fp16"  # a float literal does not widen fp16
    assert promote(fp16_tile, Val(shape=(8,), dtype="fp32")) == "fp32"
    ints = Val(shape=(8,), dtype="int32")
    assert promote(ints, const_val(3)) == "int32"
    assert promote(ints, const_val(2**40)) == "int64"  # an int64 literal is not weak
    assert promote(ints, Val(dtype="int64")) == "int64"
    assert promote(ints, Val(shape=(8,), dtype="uint64")) == "int64"


def test_folding() -> None:
    assert fold(ast.Add(), 2, 3) == 5 and fold(ast.FloorDiv(), 7, 2) == 3 and fold(ast.LShift(), 1, 4) == 16
    assert fold(ast.Div(), 1, 0) is UNKNOWN and fold(ast.Mod(), 1, 0) is UNKNOWN
    assert fold(ast.Pow(), 2, 10) == 1024 and fold(ast.Pow(), 2, 100) is UNKNOWN
    assert fold(ast.Add(), "a", 1) is UNKNOWN and fold(ast.BitAnd(), 6, 3) is UNKNOWN


def test_torch_dtype_names() -> None:
    assert tensor_dtype("torch.float16") == "fp16" and tensor_dtype("bfloat16") == "bf16"
    assert tensor_dtype("long") == "int64" and tensor_dtype("bool") == "int1"
    assert tensor_dtype("complex64") is None
