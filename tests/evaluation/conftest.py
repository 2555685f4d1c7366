"""Fixtures for the evaluator tests: one warm interpreter pool for the whole session."""

from __future__ import annotations

import glob
import os
import time
from collections.abc import Callable, Iterator

import pytest

from ascend_kernel_gym.evaluation import Evaluator
from ascend_kernel_gym.tasks import get_task


def _leftover_sandboxes(pool_root: str, workers: int) -> list[str]:
    """Child sandboxes under ``pool_root`` that should have been removed.

    Each live worker's two spare children (set up, no job yet: the next evaluation's candidate
    child and reference child) hold one directory each without a candidate file; spares of
    zygotes killed by a test remove theirs as they exit (waited for).
    """
    spares_per_worker = 2
    deadline = time.monotonic() + 60  # only a bound on a hang: returns as soon as the spares are gone
    while True:
        found = sorted(glob.glob(os.path.join(pool_root, "**", "akg-sandbox-*"), recursive=True))
        used = [path for path in found if os.path.exists(os.path.join(path, "kernel.py"))]
        spares = [path for path in found if path not in used]
        if len(spares) <= workers * spares_per_worker or time.monotonic() > deadline:
            return used + spares[workers * spares_per_worker :]
        time.sleep(0.1)


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


@pytest.fixture(scope="session")
def leftover_sandboxes() -> Callable[[str, int], list[str]]:
    """``leftover_sandboxes(pool_root, workers)``: sandboxes a finished evaluation left behind."""
    return _leftover_sandboxes
