"""The bad-input corpus: each cheating or broken candidate gets the right error type, and the
calling process is unharmed (no stray files, same working directory, the pool still serves)."""

from __future__ import annotations

import glob
import os
import re
from pathlib import Path

import pytest

from ascend_kernel_gym.evaluation import ErrorType, EvalRequest, render_feedback
from ascend_kernel_gym.evaluation.result import HACK_ERROR_TYPES
from ascend_kernel_gym.tasks import get_task

# Evaluates many kernels end to end: left out of the fast lane (`make test-fast`).
pytestmark = pytest.mark.slow

CORPUS = Path(__file__).parent / "corpus"
PWNED_GLOB = "/tmp/akg_pwned_*"


def _header(path: Path) -> dict[str, str]:
    meta: dict[str, str] = {}
    for line in path.read_text().splitlines():
        match = re.match(r"#\s*(expected|task|timeout):\s*(.+)", line)
        if match:
            meta[match.group(1)] = match.group(2).strip()
        elif line.strip() and not line.startswith("#"):
            break
    return meta


CASES = sorted(CORPUS.glob("*.py"))


def test_corpus_is_large_and_labelled() -> None:
    assert len(CASES) >= 25
    for path in CASES:
        meta = _header(path)
        assert "expected" in meta, f"{path.name} has no '# expected:' header"
        for kind in meta["expected"].split("|"):
            ErrorType(kind)  # a typo in a header fails here


@pytest.fixture(scope="module")
def corpus_results(evaluator):
    """Evaluate the whole corpus in parallel once (results in corpus order)."""
    for leftover in glob.glob(PWNED_GLOB):
        os.remove(leftover)
    cwd = os.getcwd()
    requests = []
    for path in CASES:
        meta = _header(path)
        task = get_task(meta.get("task", "core/L1/relu"))
        timeout = float(meta["timeout"]) if "timeout" in meta else None
        requests.append(EvalRequest(task=task, code=path.read_text(), timeout_s=timeout, seed=1234))
    results = evaluator.evaluate_many(requests)
    assert os.getcwd() == cwd
    return dict(zip([p.name for p in CASES], results))


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_corpus_case(path: Path, corpus_results) -> None:
    meta = _header(path)
    expected = {ErrorType(k) for k in meta["expected"].split("|")}
    result = corpus_results[path.name]
    assert result.error_type in expected, (
        f"{path.name}: expected {sorted(e.value for e in expected)}, got {result.error_type.value}: "
        f"{result.error_message}"
    )
    assert not result.correct
    assert result.hack == (result.error_type in HACK_ERROR_TYPES)
    assert result.error_message, "every failure carries a message"
    text = render_feedback(result)
    assert text and "/tmp/akg-" not in text and "site-packages" not in text


def test_calling_process_unharmed(corpus_results, evaluator, relu_task, relu_solution) -> None:
    assert corpus_results  # the corpus ran first
    assert glob.glob(PWNED_GLOB) == [], "a candidate managed to write outside its sandbox"
    after = evaluator.evaluate(EvalRequest(task=relu_task, code=relu_solution))
    assert after.ok, after.error_message
    for handle in evaluator._handles:
        assert handle.alive()
