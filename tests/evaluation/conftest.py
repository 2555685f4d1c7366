"""Fixtures for the evaluator tests: one warm interpreter pool for the whole session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ascend_kernel_gym.evaluation import Evaluator
from ascend_kernel_gym.tasks import get_task


@pytest.fixture(scope="session")
def pool_root(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Where the session pool keeps its temporary directories (checked for leftovers)."""
    return str(tmp_path_factory.mktemp("akg-evaluator-pool"))


@pytest.fixture(scope="session")
def evaluator(pool_root: str) -> Iterator[Evaluator]:
    """Two interpreter workers, no result cache (every test really evaluates)."""
    ev = Evaluator(backend="interpreter", workers=2, cache=False, memory_mb=2048, timeout_s=120, tmp_root=pool_root)
    try:
        yield ev
    finally:
        ev.close()


@pytest.fixture(scope="session")
def relu_task():
    return get_task("core/L1/relu")


@pytest.fixture(scope="session")
def relu_solution(relu_task) -> str:
    source = relu_task.solution_source()
    assert source is not None
    return source
