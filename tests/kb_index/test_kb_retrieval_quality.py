"""Retrieval quality on a labelled query set (real error strings, task descriptions, questions)."""

from __future__ import annotations

import pytest
from kb_labelled_queries import FEEDBACK_CASES, LABELLED_QUERIES, TASK_QUERIES

from ascend_kernel_gym.evaluation.feedback import render_feedback
from ascend_kernel_gym.evaluation.result import ErrorType, EvalResult
from ascend_kernel_gym.kb_index import KnowledgeBase
from ascend_kernel_gym.tasks import get_task
from ascend_kernel_gym.wrappers.kb_retrieval import build_query


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
