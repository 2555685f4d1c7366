"""The live check of dotted paths in the child (evaluation/livecheck.py)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")


def test_live_path_check_refuses_re_exported_modules() -> None:
    """A library module re-exporting a forbidden one, and modules handed around as values."""
    import torch.nn.functional  # noqa: F401

    from ascend_kernel_gym.evaluation.errors import StageError
    from ascend_kernel_gym.evaluation.livecheck import check_live_paths

    check_live_paths(["torch.nn.functional.relu", "torch.empty", "triton.cdiv"], ["torch.nn.functional.relu"])
    with pytest.raises(StageError, match="forbidden"):
        check_live_paths(["torch.nn.functional.np"])  # numpy, re-exported by torch.nn.functional
    with pytest.raises(StageError, match="used as a value"):
        check_live_paths(["typing.collections"], ["typing.collections"])  # ``[typing.collections][0]``
    check_live_paths(["triton.language.float32"], ["triton.language.float32"])  # a value, not a module
    with pytest.raises(StageError, match="used as a value"):
        check_live_paths(["torch.nn"], ["torch.nn"])
    # A library module re-exported under another module is judged by its own name.
    with pytest.raises(StageError, match=r"`torch\.save`"):
        check_live_paths(["torch.nn.functional.torch.save"])
    with pytest.raises(StageError, match=r"torch\.utils"):
        check_live_paths(["torch.nn.functional.torch.utils.data"])
    check_live_paths(["torch.nn.functional.torch.empty", "torch.nn.functional.relu", "torch.nn.Module"])
