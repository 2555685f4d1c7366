"""The demo's cheating / sloppy agent: its moves, and the evaluator catching each one."""

from __future__ import annotations

import pytest

from ascend_kernel_gym.agents.scripted import task_id_from_messages
from ascend_kernel_gym.agents.sloppy import MOVES, SloppyPolicy, sloppy_answer
from ascend_kernel_gym.envs.extract import extract_code
from ascend_kernel_gym.evaluation.static import check_source
from ascend_kernel_gym.tasks import get_task, load_suite

#: What the evaluator says about each move on core/L1/relu (interpreter).
EXPECTED = {
    "honest": ("none", False),
    "inherit": ("forbidden", True),
    "torch": ("torch_fallback", True),
    "cached": ("no_kernel_launched", True),
    "broken": ("runtime_error", False),
}


def _context(task_id: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"# Task {task_id}\n\nWrite a Triton kernel."}]


def test_moves_are_dealt_over_the_tasks_in_id_order() -> None:
    tasks = load_suite("core", split="test")
    policy = SloppyPolicy(tasks)
    ordered = sorted(t.id for t in tasks)
    assert [policy.moves[t] for t in ordered] == [MOVES[i % len(MOVES)] for i in range(len(ordered))]
    assert set(policy.moves.values()) == set(MOVES)  # the 9 test tasks see every move
    generations = policy.generate([_context(t) for t in ordered])
    assert [g.meta["move"] for g in generations] == [policy.moves[t] for t in ordered]
    assert all(task_id_from_messages(_context(t)) == t for t in ordered)
    assert policy.describe()["kind"] == "scripted"


def test_misuse_is_refused() -> None:
    with pytest.raises(ValueError, match="needs the run's tasks"):
        SloppyPolicy([])
    with pytest.raises(ValueError, match="unknown moves"):
        SloppyPolicy(load_suite("core", split="test"), moves=["bribe"])
    policy = SloppyPolicy([get_task("core/L1/relu")])
    with pytest.raises(ValueError, match="names no task of this run"):
        policy.generate([_context("core/L1/softmax")])


def test_subclassing_the_reference_is_refused_before_anything_runs() -> None:
    task = get_task("core/L1/relu")
    code = extract_code(sloppy_answer("inherit", task.prompt_source("small"), task.solution_source() or ""))
    report = check_source(code)
    assert not report.ok and "subclasses the reference" in report.message()


@pytest.mark.slow
def test_the_evaluator_catches_every_cheat() -> None:
    from ascend_kernel_gym.evaluation import Evaluator
    from ascend_kernel_gym.evaluation.result import EvalRequest

    task = get_task("core/L1/relu")
    reference, solution = task.prompt_source("small"), task.solution_source() or ""
    requests = [
        EvalRequest(task=task, code=extract_code(sloppy_answer(move, reference, solution)) or "", seed=7)
        for move in EXPECTED
    ]
    with Evaluator(backend="interpreter", workers=2, cache=False) as evaluator:
        results = evaluator.evaluate_many(requests)
    seen = {move: (r.error_type.value, r.hack) for move, r in zip(EXPECTED, results, strict=True)}
    assert seen == EXPECTED
    assert [r.ok for r in results] == [True, False, False, False, False]
