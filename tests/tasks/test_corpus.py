"""The derived ``small`` profile over a KernelBench-like corpus (tests/data/kb_corpus/, 75 files in
the styles third-party files use): every file gets one, it fits the element budget by exact count
unless its note says why not, and the reference runs on it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ascend_kernel_gym.tasks import get_task
from ascend_kernel_gym.tasks.profiles import AUTO_SMALL_TAG, derive_small_profile

CORPUS = Path(__file__).parent.parent / "data" / "kb_corpus"
FILES = sorted(CORPUS.glob("level*/*.py"))
#: files that cannot reach the budget, and the start of the note that says why
CANNOT = {
    "3_VGG_literal_classifier": "cannot be shrunk to the budget",
    "91_Embedding_fixed_vocab": "cannot be shrunk to the budget",
    "90_Tanh_shape_from_string": "size not fully known from the source",
}


def test_the_corpus_is_large_and_every_file_gets_a_small_profile_with_a_note() -> None:
    assert len(FILES) >= 60
    for path in FILES:
        task = get_task(str(path))
        assert "small" in task.profiles and AUTO_SMALL_TAG in task.tags, path.name
        note = task.profile_note("small")
        expected = CANNOT.get(path.stem)
        if expected is not None:
            assert note.startswith(expected), f"{path.name}: {note}"
        else:
            assert note.startswith(("derived:", "the file's own sizes:")), f"{path.name}: {note}"


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_exact_small_size_is_within_the_budget_and_the_estimate_is_close(path: Path) -> None:
    pytest.importorskip("torch")
    from ascend_kernel_gym.tasks.measure import measure_elements

    task = get_task(str(path))
    exact = measure_elements(task, "small")
    assert not exact.error, exact.error
    if path.stem in CANNOT:
        assert exact.total > task.size_budget
        return
    assert exact.total <= task.size_budget
    estimate = derive_small_profile(ast.parse(task.source), task.size_budget).after.total
    assert abs(estimate - exact.total) <= 0.02 * exact.total + 2, (estimate, exact.total)


@pytest.mark.slow
@pytest.mark.parametrize("path", [p for p in FILES if p.stem not in CANNOT], ids=lambda p: p.stem)
def test_the_reference_runs_on_the_derived_small_sizes(path: Path) -> None:
    torch = pytest.importorskip("torch")
    from ascend_kernel_gym.tasks.runtime import instantiate

    task = get_task(str(path))
    tm = instantiate(task, "small")
    torch.manual_seed(0)
    model = tm.Model(*tm.get_init_inputs())
    with torch.no_grad():
        out = model(*tm.get_inputs())
    assert out is not None
