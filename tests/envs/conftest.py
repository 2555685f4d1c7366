"""Fixtures for the env tests."""

from __future__ import annotations

import pytest
from env_helpers import FakeEvaluator


@pytest.fixture
def fake_evaluator() -> FakeEvaluator:
    return FakeEvaluator()


@pytest.fixture
def fake_feedback(monkeypatch: pytest.MonkeyPatch) -> None:
    """Replace render_feedback (the evaluator's) by a stub so unit tests do not depend on its wording."""
    import ascend_kernel_gym.envs.ascend_triton as module

    monkeypatch.setattr(module, "_render_feedback", lambda result: f"[feedback: {result.error_type.value}]")
