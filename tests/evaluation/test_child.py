"""Parts of the evaluation child that can be tested in this process (evaluation/child.py)."""

from __future__ import annotations

import torch

from ascend_kernel_gym.evaluation.child import LibrarySnapshot


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
