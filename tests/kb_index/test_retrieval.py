"""KnowledgeBase (kb_index/retrieval.py): the hybrid ranking (triggers, extra ids, dense results), its
arguments, user entry directories, and retrieval quality on a labelled query set (real error strings,
task descriptions, questions)."""

from __future__ import annotations

from pathlib import Path

import pytest
from kb_labelled_queries import FEEDBACK_CASES, LABELLED_QUERIES, TASK_QUERIES

from ascend_kernel_gym.evaluation.feedback import render_feedback
from ascend_kernel_gym.evaluation.result import ErrorType, EvalResult
from ascend_kernel_gym.kb_index import KnowledgeBase, load_entries
from ascend_kernel_gym.tasks import get_task
from ascend_kernel_gym.wrappers.kb_retrieval import build_query

USER_ENTRY = """---
id: my-tip
title: A tip
tags: [grid]
triggers:
  - 'my special error \\d+'
source: TA PG
---
One. Two. Three.
"""


def write(directory: Path, name: str, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def kb() -> KnowledgeBase:
    # The index is cached under $AKG_CACHE_DIR (a per-session temp dir set by tests/conftest.py).
    kb = KnowledgeBase()
    kb.build()
    return kb


def test_the_labels_name_real_entries_and_the_set_is_large_enough(kb: KnowledgeBase) -> None:
    assert len(LABELLED_QUERIES) >= 30
    for query, expected in LABELLED_QUERIES:
        assert expected, query
        for entry_id in expected:
            assert entry_id in kb, f"label {entry_id!r} of {query!r} is not an entry"


def test_recall_at_3_on_the_labelled_set(kb: KnowledgeBase) -> None:
    misses = []
    for query, expected in LABELLED_QUERIES:
        top3 = [h.id for h in kb.search(query, k=3)]
        if not set(expected) & set(top3):
            misses.append((query, expected, top3))
    recall = 1 - len(misses) / len(LABELLED_QUERIES)
    assert recall >= 0.9, f"recall@3 = {recall:.3f}; misses: {misses}"


def test_dense_retrieval_alone_handles_task_descriptions(kb: KnowledgeBase) -> None:
    """Task descriptions fire no trigger: this part of the score is the embedding model's."""
    hit = 0
    for query, expected in TASK_QUERIES:
        hits = kb.search(query, k=3)
        assert all(h.why == "dense" for h in hits), (query, [h.why for h in hits])
        hit += bool(set(expected) & {h.id for h in hits})
    assert hit / len(TASK_QUERIES) >= 0.75


def test_evaluator_feedback_queries_put_the_answer_first(kb: KnowledgeBase) -> None:
    """The KB wrapper's own query path: the evaluator's rendered feedback plus the task."""
    top1 = top3 = 0
    for task_id, error_type, message, expected in FEEDBACK_CASES:
        result = EvalResult(
            task_id=task_id, backend="interpreter", profile="small", code_hash="h",
            error_type=ErrorType(error_type), error_message=message,
        )  # fmt: skip
        query, trigger_text = build_query(get_task(task_id), render_feedback(result), result.to_dict())
        ids = [h.id for h in kb.search(query, k=3, trigger_text=trigger_text)]
        top1 += ids[0] in expected
        top3 += bool(set(expected) & set(ids))
    assert top3 / len(FEEDBACK_CASES) >= 0.9
    assert top1 / len(FEEDBACK_CASES) >= 0.8


def test_triggers_come_first_then_dense_results(kb: KnowledgeBase) -> None:
    hits = kb.search("RuntimeError: coreDim=98304 can't be greater than UINT16_MAX", k=3)
    assert hits[0].id == "grid-uint16-max-coredim" and hits[0].why.startswith("trigger: ")
    assert all(h.why == "dense" for h in hits[1:])
    dense_scores = [h.score for h in hits[1:]]
    assert dense_scores == sorted(dense_scores, reverse=True)
    # A specific message trigger outranks the generic typed-error trigger.
    hits = kb.search(
        "tl.sort: int32 input is not supported",
        k=3,
        trigger_text="tl.sort: int32 is not supported\nerror_type: compile_error",
    )
    assert hits[0].id == "sort-dtype-limits" and hits[1].id == "eval-compile-error"
    assert all(h.to_dict().keys() == {"id", "score", "why"} for h in hits)


def test_user_directory_entries_are_loaded_and_retrieved(tmp_path: Path) -> None:
    write(tmp_path, "my-tip.md", USER_ENTRY)
    write(tmp_path, "_draft.md", "ignored: files starting with an underscore are skipped")
    kb = KnowledgeBase(extra_dirs=[tmp_path])
    assert "my-tip" in kb and len(kb) == len(load_entries()) + 1
    hits = kb.search("RuntimeError: my special error 7", k=2, dense=False)
    assert [h.id for h in hits] == ["my-tip"]


def test_missing_user_directory_and_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does-not-exist"):
        KnowledgeBase(extra_dirs=[tmp_path / "does-not-exist"])
    with pytest.raises(TypeError, match="extra_dirs must be a list"):
        KnowledgeBase(extra_dirs=str(tmp_path))
    kb = KnowledgeBase()
    with pytest.raises(ValueError, match="k must be >= 1"):
        kb.search("x", k=0, dense=False)
    with pytest.raises(ValueError, match="non-empty"):
        kb.search("  ", dense=False)
    with pytest.raises(KeyError, match="no knowledge-base entry"):
        kb.get("nope")


def test_exclude_and_k_limit_trigger_hits() -> None:
    kb = KnowledgeBase()
    text = "MLIRCompilationError: [ConvertLinalgRToBinary] ub overflow, requires 1 bits while 2 bits available"
    all_hits = kb.search(text, k=10, dense=False)
    ids = [h.id for h in all_hits]
    assert ids[0] == "ub-overflow-compile-error" and len(ids) >= 3
    assert len(kb.search(text, k=2, dense=False)) == 2
    assert "ub-overflow-compile-error" not in [h.id for h in kb.search(text, k=10, dense=False, exclude=[ids[0]])]


def test_extra_hits_rank_after_triggers_and_unknown_ids_are_skipped() -> None:
    kb = KnowledgeBase()
    extra = [("grid-prefer-1d", "ascend_check: x"), ("no-such-entry", "y"), ("grid-prefer-1d", "dup")]
    hits = kb.search("coreDim=70000 can't be greater than UINT16_MAX", k=3, dense=False, extra=extra)
    assert [(h.id, h.why) for h in hits] == [
        ("grid-uint16-max-coredim", hits[0].why),
        ("grid-prefer-1d", "ascend_check: x"),
    ]
    assert hits[0].why.startswith("trigger: ")
    assert kb.search("nothing matches", k=1, dense=False, extra=extra)[0].id == "grid-prefer-1d"
    assert kb.search("nothing matches", k=3, dense=False, extra=extra, exclude=["grid-prefer-1d"]) == []


def test_exclude_tags_drop_dense_results_but_keep_trigger_hits(kb: KnowledgeBase) -> None:
    query = "RuntimeError: coreDim=98304 can't be greater than UINT16_MAX"
    hits = kb.search(query, k=5)
    trigger, dense = hits[0], [h for h in hits if h.why == "dense"]
    assert trigger.why.startswith("trigger: ") and dense
    excluded = {*trigger.entry.tags, *dense[0].entry.tags}
    filtered = kb.search(query, k=5, exclude_tags=excluded)
    assert filtered[0].id == trigger.id  # kept although its own tags are excluded
    assert len(filtered) == 5 and dense[0].id not in {h.id for h in filtered}
    assert all(not excluded & set(h.entry.tags) for h in filtered[1:])
