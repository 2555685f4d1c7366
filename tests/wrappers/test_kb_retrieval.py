"""KBRetrievalWrapper over the real AscendTritonEnv, alone and stacked with CompactionWrapper."""

from __future__ import annotations

import json

import pytest
from compaction_kb_helpers import RELU, kernel_answer, make_env, stub_feedback

from ascend_kernel_gym.kb_index import KnowledgeBase
from ascend_kernel_gym.wrappers.compaction import SUMMARY_HEADER, CompactionWrapper
from ascend_kernel_gym.wrappers.kb_retrieval import TIPS_HEADER, KBRetrievalWrapper, build_query


@pytest.fixture(scope="module")
def kb() -> KnowledgeBase:
    kb = KnowledgeBase()  # index cached under $AKG_CACHE_DIR (tests/conftest.py)
    kb.build()
    return kb


@pytest.fixture(autouse=True)
def _feedback(monkeypatch: pytest.MonkeyPatch) -> None:
    stub_feedback(monkeypatch)


def assert_consistent(env, obs: str, info: dict) -> None:
    assert env.observation_space.contains(obs)
    assert obs == env.unwrapped.render_observation()
    assert info["messages"] == env.unwrapped.messages
    json.dumps(info)


def last_user(info: dict) -> str:
    return next(m["content"] for m in reversed(info["messages"]) if m["role"] == "user")


def test_reset_injects_task_tips_into_the_task_prompt(kb: KnowledgeBase) -> None:
    env = KBRetrievalWrapper(make_env(), kb=kb, k=3)
    obs, info = env.reset(seed=0)
    assert_consistent(env, obs, info)
    hits = info["kb"]["hits"]
    assert 1 <= len(hits) <= 3 and info["kb"]["injected"] and info["kb"]["skipped"] is None
    assert all(h["why"] == "dense" and h["score"] >= env.min_score for h in hits)
    assert "Elementwise ReLU" in info["kb"]["query"]
    task_prompt = info["messages"][1]["content"]
    assert TIPS_HEADER in task_prompt and TIPS_HEADER in obs
    for h in hits:
        assert f"- [{h['id']}] {kb.get(h['id']).title}" in task_prompt
    assert len(info["messages"]) == 2  # appended to the prompt, not a new message


def test_step_tips_answer_the_error_and_are_injected_into_the_feedback(kb: KnowledgeBase) -> None:
    env = KBRetrievalWrapper(make_env(), kb=kb, k=3, inject_on_reset=False)
    obs, info = env.reset(seed=0)
    assert TIPS_HEADER not in obs and info["kb"]["skipped"] == "reset"
    obs, _, _, _, info = env.step(kernel_answer("UBOVERFLOW"))
    assert_consistent(env, obs, info)
    hits = info["kb"]["hits"]
    assert hits[0]["id"] == "ub-overflow-compile-error" and hits[0]["why"].startswith("trigger: ")
    feedback_message = last_user(info)
    assert feedback_message.index("ub overflow") < feedback_message.index(TIPS_HEADER)
    assert "[ub-overflow-compile-error]" in feedback_message
    obs, _, _, _, info = env.step(kernel_answer("FALLBACK"))
    assert info["kb"]["hits"][0]["id"] == "eval-torch-fallback"
    assert "[eval-torch-fallback]" in last_user(info) and "[eval-torch-fallback]" in obs


def test_recently_shown_tips_are_skipped(kb: KnowledgeBase) -> None:
    env = KBRetrievalWrapper(make_env(), kb=kb, k=3, skip_recent_turns=1, inject_on_reset=False)
    env.reset(seed=0)
    _, _, _, _, first = env.step(kernel_answer("GRID"))
    first_ids = {h["id"] for h in first["kb"]["hits"]}
    assert "grid-uint16-max-coredim" in first_ids
    _, _, _, _, second = env.step(kernel_answer("GRID"))
    second_ids = {h["id"] for h in second["kb"]["hits"]}
    assert second_ids and not (first_ids & second_ids)
    _, _, _, _, third = env.step(kernel_answer("GRID"))  # the window is 1 turn: turn-1 tips may return
    assert "grid-uint16-max-coredim" in {h["id"] for h in third["kb"]["hits"]}

    repeat = KBRetrievalWrapper(make_env(), kb=kb, k=3, skip_recent_turns=0, inject_on_reset=False)
    repeat.reset(seed=0)
    ids = [[h["id"] for h in repeat.step(kernel_answer("GRID"))[4]["kb"]["hits"]] for _ in range(2)]
    assert ids[0] == ids[1]


def test_no_tips_on_the_last_step(kb: KnowledgeBase) -> None:
    env = KBRetrievalWrapper(make_env(max_turns=1), kb=kb)
    env.reset(seed=0)
    _obs, _, _, truncated, info = env.step(kernel_answer("UBOVERFLOW"))
    assert truncated and info["kb"] == {"query": None, "hits": [], "injected": False, "skipped": "episode_end"}
    assert TIPS_HEADER not in last_user(info)


def test_trigger_only_mode_needs_no_embedding_model(kb: KnowledgeBase) -> None:
    env = KBRetrievalWrapper(make_env(), kb=kb, dense=False)
    obs, info = env.reset(seed=0)
    assert info["kb"]["hits"] == [] and info["kb"]["skipped"] == "no_hits" and TIPS_HEADER not in obs
    obs, _, _, _, info = env.step(kernel_answer("GRID"))
    assert [h["id"] for h in info["kb"]["hits"]][:1] == ["grid-uint16-max-coredim"]
    assert all(h["score"] is None for h in info["kb"]["hits"])


def test_build_query_uses_task_and_feedback() -> None:
    class T:
        description, category, name = "Softmax over rows.", "softmax", "softmax"

    query, trigger = build_query(T(), "Compile error:\nboom", {"error_type": "compile_error", "error_message": "boom"})
    assert "Softmax over rows." in query and "boom" in query
    assert "error_type: compile_error" in trigger and "Compile error" in trigger
    query, trigger = build_query(T(), None, None)
    assert "Softmax over rows." in query and trigger == ""


def test_argument_validation(kb: KnowledgeBase) -> None:
    base = make_env()
    with pytest.raises(ValueError, match="k must be"):
        KBRetrievalWrapper(base, kb=kb, k=0)
    with pytest.raises(ValueError, match="skip_recent_turns"):
        KBRetrievalWrapper(base, kb=kb, skip_recent_turns=-1)
    with pytest.raises(TypeError, match="kb must be a KnowledgeBase"):
        KBRetrievalWrapper(base, kb=object())


# ---------------------------------------------------------------------- stacking with compaction


@pytest.mark.parametrize("strategy", ["rules", "policy"])
@pytest.mark.parametrize("order", ["kb_outside", "compaction_outside"])
def test_stacked_with_compaction_in_either_order(kb: KnowledgeBase, order: str, strategy: str) -> None:
    base = make_env(max_turns=12)
    if order == "kb_outside":
        env = KBRetrievalWrapper(CompactionWrapper(base, budget_tokens=3500, strategy=strategy), kb=kb, k=2)
    else:
        env = CompactionWrapper(KBRetrievalWrapper(base, kb=kb, k=2), budget_tokens=3500, strategy=strategy)
    compaction = env if isinstance(env, CompactionWrapper) else env.env
    obs, info = env.reset(seed=0)
    assert_consistent(env, obs, info)
    assert "kb" in info and "segment" in info
    compacted, steps_after_compaction = 0, 0
    for marker in ["UBOVERFLOW", "GRID", "BROKEN", "FALLBACK", "CORRECT", "UBOVERFLOW", "GRID", "BROKEN"] * 2:
        action = (
            "Summary: UB overflow and grid errors so far." if compaction.awaiting_summary else kernel_answer(marker, 40)
        )
        obs, _, terminated, truncated, info = env.step(action)
        assert_consistent(env, obs, info)
        seg, kb_info = info["segment"], info["kb"]
        # The compaction wrapper's token count is of the context the policy sees next.
        if order == "compaction_outside":
            assert seg["tokens_after"] == compaction.count_tokens()
        if seg["summary_requested"]:
            assert kb_info["skipped"] == "summary_requested" or order == "compaction_outside"
        if seg["compacted"]:
            compacted += 1
            summary_message = info["messages"][-1]["content"]
            assert SUMMARY_HEADER in summary_message or "Your summary" in summary_message
            if order == "kb_outside":  # tips are added to the fresh summary message
                assert (TIPS_HEADER in summary_message) == kb_info["injected"]
            else:  # the history with its tips was replaced; the summary carries none
                assert TIPS_HEADER not in summary_message
        steps_after_compaction += compacted > 0
        if terminated or truncated or steps_after_compaction > 2:
            break
    assert compacted >= 1


def test_a_summary_turn_retrieves_with_the_last_kernel_result(kb: KnowledgeBase) -> None:
    # Compaction reports eval={} and feedback="" on a summary turn; the query must come from the last kernel turn.
    env = KBRetrievalWrapper(CompactionWrapper(make_env(max_turns=12), budget_tokens=3000, strategy="policy"), kb=kb)
    env.reset(seed=0)
    for _ in range(12):
        _, _, terminated, truncated, info = env.step(kernel_answer("UBOVERFLOW", 40))
        assert not (terminated or truncated)
        if info["segment"]["summary_requested"]:
            break
    assert info["kb"]["skipped"] == "summary_requested"
    _, _, _, _, info = env.step("Summary: UB overflow on every attempt so far.")
    assert info["segment"]["is_summary_turn"] and info["eval"] == {} and info["feedback"] == ""
    assert "ub overflow" in info["kb"]["query"]
    assert info["kb"]["hits"][0]["why"].startswith("trigger:")


@pytest.mark.slow
def test_kb_wrapper_with_the_real_evaluator(kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> None:
    import ascend_kernel_gym.envs.ascend_triton as module
    from ascend_kernel_gym.envs.ascend_triton import AscendTritonEnv
    from ascend_kernel_gym.evaluation.feedback import render_feedback
    from ascend_kernel_gym.tasks import get_task

    monkeypatch.setattr(module, "_render_feedback", render_feedback)  # the evaluator's real feedback text
    env = KBRetrievalWrapper(
        AscendTritonEnv(task_ids=[RELU], backend="interpreter", max_turns=3, num_trials=2), kb=kb, k=3
    )
    obs, info = env.reset(seed=0)
    broken = get_task(RELU).solution_source().replace("BLOCK_SIZE = 1024", "BLOCK_SIZE = 1000")
    obs, _, _, _, info = env.step(f"```python\n{broken}\n```")
    assert "power of 2" in info["feedback"]
    assert info["kb"]["hits"][0]["id"] == "arange-rules-ascend"
    assert "[arange-rules-ascend]" in last_user(info)
    assert_consistent(env, obs, info)


def test_evaluator_tips_are_kept_out_of_dense_results_when_there_is_no_error(kb: KnowledgeBase) -> None:
    env = KBRetrievalWrapper(make_env(), kb=kb, k=3, min_score=None)
    _, info = env.reset(seed=0)
    tags = {t for h in info["kb"]["hits"] for t in kb.get(h["id"]).tags}
    assert info["kb"]["hits"] and not tags & {"evaluator", "benchmark"}
    _, _, _, _, info = env.step(kernel_answer("CORRECT"))
    tags = {t for h in info["kb"]["hits"] for t in kb.get(h["id"]).tags}
    assert info["kb"]["hits"] and not tags & {"evaluator", "benchmark"}
    # An error brings its evaluator entry back through the trigger.
    _, _, _, _, info = env.step(kernel_answer("FALLBACK"))
    assert info["kb"]["hits"][0]["id"] == "eval-torch-fallback"
    # The filter applies to dense results only, and only when asked.
    query = "Task (activation, relu): Elementwise ReLU over a 2-D float32 tensor."
    unfiltered = {h.id for h in kb.search(query, k=len(kb))}
    filtered = {h.id for h in kb.search(query, k=len(kb), exclude_tags={"evaluator"})}
    assert {e for e in unfiltered - filtered} == {e.id for e in kb.entries if "evaluator" in e.tags}


def test_ascend_rule_findings_bring_their_entries(kb: KnowledgeBase) -> None:
    env = KBRetrievalWrapper(make_env(), kb=kb, k=3, inject_on_reset=False)
    env.reset(seed=0)
    _, _, _, _, info = env.step(kernel_answer("ASCENDWARN"))
    first = info["kb"]["hits"][0]
    assert first == {**first, "id": "grid-persistent-physical-cores", "why": "ascend_check: grid_oversubscribed"}
    assert "[grid-persistent-physical-cores]" in last_user(info)


def test_every_ascend_rule_names_an_existing_entry(kb: KnowledgeBase) -> None:
    from ascend_kernel_gym.ascend.checks import RULES

    missing = {rule.id: rule.kb_id for rule in RULES.values() if rule.kb_id not in kb}
    assert not missing
