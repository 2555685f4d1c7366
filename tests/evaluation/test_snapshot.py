"""The library snapshot that detects monkeypatching (evaluation/snapshot.py)."""

from __future__ import annotations

import pytest
import torch

from ascend_kernel_gym.evaluation.errors import StageError
from ascend_kernel_gym.evaluation.result import ErrorType
from ascend_kernel_gym.evaluation.snapshot import LibrarySnapshot, check_snapshot


def test_library_snapshot_sees_replacements_and_survives_additions() -> None:
    snapshot = LibrarySnapshot()
    assert snapshot.changed() == []
    original = torch.nn.functional.softmax
    try:
        torch.nn.functional.softmax = lambda *args, **kwargs: None
        assert snapshot.changed() == ["torch.nn.functional.softmax"]
    finally:
        torch.nn.functional.softmax = original
    assert snapshot.changed() == []
    torch.Tensor.akg_test_added = lambda self: None  # a new name (a lazy import does this) is no patch
    try:
        assert snapshot.changed() == []
        replaced = torch.Tensor.__add__
        torch.Tensor.__add__ = torch.Tensor.__sub__  # still seen after the new baseline
        try:
            assert snapshot.changed() == ["torch.Tensor.__add__"]
        finally:
            torch.Tensor.__add__ = replaced
    finally:
        del torch.Tensor.akg_test_added
    assert snapshot.changed() == []


def test_check_snapshot_names_the_replaced_function_and_harness_functions_count() -> None:
    from ascend_kernel_gym.evaluation import compare

    snapshot = LibrarySnapshot()
    check_snapshot(snapshot)  # nothing changed: no error
    original = compare.outputs_close
    try:
        compare.outputs_close = lambda *args, **kwargs: True  # the harness's own module, patched
        with pytest.raises(StageError) as info:
            check_snapshot(snapshot)
    finally:
        compare.outputs_close = original
    assert info.value.error_type == ErrorType.SANDBOX_VIOLATION
    assert "ascend_kernel_gym.evaluation.compare.outputs_close" in info.value.message
    check_snapshot(snapshot)


def test_the_module_classes_a_reference_is_built_from_are_watched() -> None:
    # The timing stage's reference runs in the candidate's process: a patched nn.GELU (reached
    # through a name the static stage cannot follow) slowed only the reference.
    snapshot = LibrarySnapshot()
    original = torch.nn.GELU.forward
    try:
        torch.nn.GELU.forward = lambda self, x: x
        assert snapshot.changed() == ["torch.nn.GELU.forward"]
    finally:
        torch.nn.GELU.forward = original
    assert snapshot.changed() == []
    torch.nn.Linear.__call__ = lambda self, *args: None  # shadows the inherited Module.__call__
    try:
        assert "torch.nn.Linear.__call__" in snapshot.changed()
    finally:
        del torch.nn.Linear.__call__
    assert snapshot.changed() == []
