"""Per-task device-memory needs (evaluation/memory_book.py): the size prior, measurements, the ratio."""

from __future__ import annotations

import dataclasses

from ascend_kernel_gym.evaluation.memory_book import (
    CONTEXT_BYTES,
    DEFAULT_RATIO,
    MIB,
    WINDOW,
    MemoryBook,
    measured_need,
    task_bytes,
)
from ascend_kernel_gym.evaluation.result import EvalResult, Stage
from ascend_kernel_gym.tasks.suite import get_task
from ascend_kernel_gym.tasks.task import Task

GIB = 1 << 30


def _task(name: str, elements: int | None, dtype: str = "float32", source: str = "x = 1\n") -> Task:
    return Task(
        id=f"third/L1/{name}", name=name, level=1, category="c", description="d", source=source, dtype=dtype,
        profile_elements={"full": elements},
    )  # fmt: skip


def _result(candidate_mb: float | None, reference_mb: float | None, stage: Stage = Stage.DONE) -> EvalResult:
    memory = {k: v for k, v in (("candidate", candidate_mb), ("reference", reference_mb)) if v is not None}
    return EvalResult(task_id="t", backend="cuda", profile="full", code_hash="h", stage=stage, device_memory_mb=memory)


def test_a_task_file_sizes_its_evaluation_before_any_is_measured() -> None:
    task = _task("a", 256 * MIB // 2, dtype="float16")  # 256 MiB of inputs and parameters
    assert task_bytes(task, "full") == 256 * MIB
    assert MemoryBook().need(task, "full") == int(256 * MIB * DEFAULT_RATIO) + 2 * CONTEXT_BYTES
    assert MemoryBook().need(_task("b", None), "full") is None  # no size: unknown
    assert MemoryBook().need(task, "small") is None
    # a bundled task has its loader's estimate
    assert MemoryBook().need(get_task("core/L2/causal_softmax"), "full") > 12 * GIB


def test_measurements_replace_the_prior_and_the_largest_recent_one_counts() -> None:
    book, task = MemoryBook(), _task("a", 64 * MIB)
    book.observe(task, "full", _result(1000.0, 3000.0))
    assert book.need(task, "full") == 4000 * MIB + 2 * CONTEXT_BYTES
    book.observe(task, "full", _result(500.0, 500.0))  # a smaller one does not lower it
    assert book.need(task, "full") == 4000 * MIB + 2 * CONTEXT_BYTES
    for _ in range(WINDOW):  # ... until it is out of the window
        book.observe(task, "full", _result(500.0, 500.0))
    assert book.need(task, "full") == 1000 * MIB + 2 * CONTEXT_BYTES
    book.observe(task, "full", _result(None, None))  # no reading (the CPU, a child cut for time)
    assert book.need(task, "full") == 1000 * MIB + 2 * CONTEXT_BYTES
    # another profile, and a task with the same id and another file, are other keys
    assert book.need(task, "small") is None
    other = dataclasses.replace(task, source="y = 2\n")
    assert book.need(other, "full") != book.need(task, "full")


def test_the_ratio_comes_from_the_measured_tasks_once_there_are_enough() -> None:
    book = MemoryBook()
    new = _task("new", 512 * MIB // 4)  # 512 MiB
    for i, ratio in enumerate((4.0, 5.0, 6.0)):
        task = _task(f"m{i}", 256 * MIB // 4)
        assert book.need(new, "full") == int(512 * MIB * DEFAULT_RATIO) + 2 * CONTEXT_BYTES
        book.observe(task, "full", _result(ratio * 256, 0.0))
    need = book.need(new, "full")
    assert need == 512 * MIB * 5 + 2 * CONTEXT_BYTES  # the median
    # a small task (fixed costs dominate its need) does not move it
    book.observe(_task("tiny", 1024), "full", _result(5000.0, 5000.0))
    assert book.need(new, "full") == need


def test_a_forged_reading_is_no_reading() -> None:
    assert measured_need(_result(None, None)) is None
    forged = _result(100.0, None)
    forged.device_memory_mb = {"candidate": "a lot", "reference": True}  # type: ignore[dict-item]
    assert measured_need(forged) is None
    forged.device_memory_mb = ["not", "a", "dict"]  # type: ignore[assignment]
    assert measured_need(forged) is None


def test_the_need_sums_the_phases_that_overlap_not_the_two_peaks() -> None:
    def need(**memory: float) -> int | None:
        return measured_need(
            EvalResult(task_id="t", backend="cuda", profile="full", code_hash="h", device_memory_mb=memory)
        )

    contexts = 2 * CONTEXT_BYTES
    phases = {"candidate_compile": 500.0, "candidate_correctness": 3000.0, "candidate_timing": 4000.0}
    # the plan's peak comes next to the compile stage, the judging next to the trials, nothing next to the timing
    full = need(candidate=4000.0, reference=6000.0, reference_plan=6000.0, reference_judging=2000.0, **phases)
    assert full == 6500 * MIB + contexts  # the plan and the compile stage, not 4000 + 6000
    assert need(candidate=4000.0, reference=6000.0, reference_plan=1000.0, reference_judging=2000.0, **phases) == (
        5000 * MIB + contexts  # judging 2000 next to the trials' 3000
    )
    assert need(candidate=9000.0, reference=100.0, reference_plan=100.0, reference_judging=100.0,
                **{**phases, "candidate_timing": 9000.0}) == 9000 * MIB + contexts  # fmt: skip
    # a judge that reported one peak: it counts next to every phase it could overlap
    assert need(candidate=4000.0, reference=6000.0, **phases) == 9000 * MIB + contexts
    # no phases (an older child, or one cut short): the two peaks as if they coincided
    assert need(candidate=4000.0, reference=6000.0) == 10000 * MIB + contexts
    # an evaluation that ended in its compile stage: the plan next to it
    assert need(candidate=500.0, reference=6000.0, reference_plan=6000.0, candidate_compile=500.0) == (
        6500 * MIB + contexts
    )


def test_evaluations_that_ended_early_do_not_lower_the_need() -> None:
    """A compile error or a wrong output ends before the timing stage, whose buffers are the
    candidate's largest: such readings never pull a task's need below the prior or below the
    evaluations that did time, and count only when they took more."""
    book, task = MemoryBook(), _task("a", 64 * MIB)
    prior = book.need(task, "full")
    for _ in range(WINDOW + 1):
        book.observe(task, "full", _result(200.0, 800.0, Stage.COMPILE))
    assert book.need(task, "full") == prior
    book.observe(task, "full", _result(30000.0, 3000.0, Stage.CORRECTNESS))  # more than the prior
    assert book.need(task, "full") == 33000 * MIB + 2 * CONTEXT_BYTES
    timed = _task("b", 64 * MIB)
    book.observe(timed, "full", _result(6000.0, 2000.0, Stage.DONE))
    for _ in range(WINDOW + 1):
        book.observe(timed, "full", _result(100.0, 2000.0, Stage.STATIC))
    assert book.need(timed, "full") == 8000 * MIB + 2 * CONTEXT_BYTES
    unsized = _task("c", None)
    book.observe(unsized, "full", _result(100.0, 400.0, Stage.COMPILE))
    assert book.need(unsized, "full") == 500 * MIB + 2 * CONTEXT_BYTES


def test_what_the_judge_holds_during_the_trials_is_idle_while_the_evaluation_times() -> None:
    book, task = MemoryBook(), _task("a", 64 * MIB)
    assert book.idle_in_timing(task, "full") == 0  # nothing measured: nothing known idle

    def judged(judging_mb: float, stage: Stage = Stage.DONE) -> EvalResult:
        result = _result(3000.0, 5000.0, stage)
        result.device_memory_mb |= {"reference_plan": 5000.0, "reference_judging": judging_mb}
        return result

    book.observe(task, "full", judged(4000.0, Stage.CORRECTNESS))  # it never timed: says nothing
    assert book.idle_in_timing(task, "full") == 0
    for judging in (4000.0, 2500.0, 3000.0):
        book.observe(task, "full", judged(judging))
    assert book.idle_in_timing(task, "full") == 2500 * MIB  # the least of the recent ones
    for _ in range(WINDOW):
        book.observe(task, "full", judged(3500.0))
    assert book.idle_in_timing(task, "full") == 3500 * MIB  # only the last WINDOW count
    assert book.idle_in_timing(_task("b", 64 * MIB), "full") == 0
