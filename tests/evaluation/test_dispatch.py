"""Who gets the next free worker (evaluation/dispatch.py), and evaluate_many handing its batch to it."""

from __future__ import annotations

import threading
import time

from ascend_kernel_gym.evaluation import EvalRequest, EvalResult, Evaluator
from ascend_kernel_gym.evaluation.dispatch import WINDOW, DurationBook, WorkerQueue, prior_s, weight
from ascend_kernel_gym.evaluation.evaluator import DISPATCH_DEPTH
from ascend_kernel_gym.tasks.suite import get_task


def _wait_for(predicate, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def _queued_takers(queue: WorkerQueue, expectations: list[float], got: list[float]) -> list[threading.Thread]:
    threads, before = [], queue.waiting
    for expected in expectations:

        def take(expected: float = expected) -> None:
            worker, _ = queue.take(expected)
            got.append(expected)
            queue.give_back(worker)

        thread = threading.Thread(target=take)
        thread.start()
        threads.append(thread)
        _wait_for(lambda n=before + len(threads): queue.waiting == n)  # each is waiting before the next asks
    return threads


def test_the_longest_expected_waiting_caller_gets_the_next_free_worker() -> None:
    queue: WorkerQueue[str] = WorkerQueue(["w"], load=lambda w: 0)
    held, _ = queue.take(0.0)
    got: list[float] = []
    threads = _queued_takers(queue, [1.0, 5.0, 3.0, 5.0], got)
    queue.give_back(held)
    for thread in threads:
        thread.join(30)
    assert got == [5.0, 5.0, 3.0, 1.0]  # equal expectations keep their order of arrival


def test_a_caller_waiting_past_the_starvation_limit_goes_first() -> None:
    queue: WorkerQueue[str] = WorkerQueue(["w"], load=lambda w: 0, starve_s=0.2)
    held, _ = queue.take(0.0)
    got: list[float] = []
    threads = _queued_takers(queue, [1.0], got)
    time.sleep(0.3)  # the short one has waited past the limit ...
    threads += _queued_takers(queue, [9.0], got)  # ... a longer one arrives after it
    queue.give_back(held)
    for thread in threads:
        thread.join(30)
    assert got == [1.0, 9.0]


def test_a_longer_caller_that_does_not_fit_yet_lets_a_shorter_one_that_fits_go_first() -> None:
    room = [10]  # what the device would admit now, in GiB
    queue: WorkerQueue[str] = WorkerQueue(["a", "b"], load=lambda w: 0, fits=lambda w, need: need <= room[0])
    held, _ = queue.take(1.0, need=1)
    got: list[float] = []

    held_back: dict[float, bool] = {}

    def take(expected: float, need: int) -> None:
        _, held_back[expected] = queue.take(expected, need)  # keeps its worker
        got.append(expected)

    long = threading.Thread(target=take, args=(9.0, 20))
    long.start()
    _wait_for(lambda: queue.waiting == 1)
    short = threading.Thread(target=take, args=(2.0, 5))
    short.start()
    short.join(30)
    assert got == [2.0] and queue.waiting == 1  # the long one waits without a worker ...
    room[0] = 30
    queue.give_back(held)
    long.join(30)
    assert got == [2.0, 9.0]  # ... and goes once it fits
    assert held_back == {2.0: False, 9.0: True}  # the caller says the long one waited for memory


def test_the_idle_worker_on_the_least_loaded_device_is_handed_out() -> None:
    loads = {"busy": 3, "quiet": 0}
    queue: WorkerQueue[str] = WorkerQueue(["busy", "quiet"], load=loads.__getitem__)
    assert queue.take(1.0) == ("quiet", False)
    assert queue.take(1.0) == ("busy", False)


def test_expected_times_come_from_the_task_once_measured_and_from_the_code_before() -> None:
    book = DurationBook()
    l1, l3 = get_task("core/L1/relu"), get_task("core/L3/gpt2_block")
    short, long = "x = 1\n" * 30, "x = 1\n" * 180
    assert prior_s(l1, short) < prior_s(l1, long) < prior_s(l3, long)
    assert prior_s(l1, "") > 0
    assert book.expected_s(l3, "full", long) == prior_s(l3, long)

    def result(child_s: float | None) -> EvalResult:
        r = EvalResult(task_id=l3.id, backend="cuda", profile="full", code_hash="h")
        if child_s is not None:
            r.stage_durations["child_wall"] = child_s
        return r

    for seconds in (2.0, 9.0, 4.0):
        book.observe(l3, "full", result(seconds))
    book.observe(l3, "full", result(None))  # a static refusal: no child ran
    assert book.expected_s(l3, "full", long) == 4.0  # the median, whatever the code
    assert book.expected_s(l3, "small", long) == prior_s(l3, long)  # another profile is another key
    for _ in range(WINDOW):
        book.observe(l3, "full", result(1.0))
    assert book.expected_s(l3, "full", long) == 1.0  # the old ones left the window


def test_evaluate_many_runs_the_longest_expected_first_and_reports_each_result_once(relu_task, relu_solution) -> None:
    ev = Evaluator(backend="interpreter", workers=1, start=False, cache=False)
    calls: list[str] = []
    release = threading.Event()

    def fake_run_on(handle, job, timeout, base):
        calls.append(job.code)
        if len(calls) == 1:  # hold the only worker until every other request waits for it
            release.wait(30)
        result = EvalResult.from_dict(base.to_dict())
        result.correct = True
        result.stage_durations["child_wall"] = 1.0
        return result

    ev._run_on = fake_run_on
    codes = [relu_solution + "\n# pad\n" * n for n in (0, 40, 10, 80, 20)]
    seen: list[int] = []
    done = threading.Event()
    results: list[EvalResult] = []

    def batch() -> None:
        results.extend(
            ev.evaluate_many(
                [EvalRequest(task=relu_task, code=c) for c in codes], on_result=lambda i, r: seen.append(i)
            )
        )
        done.set()

    try:
        threading.Thread(target=batch, daemon=True).start()
        # the threads of one worker, or one per request
        _wait_for(lambda: len(calls) == 1 and ev._queue.waiting == min(DISPATCH_DEPTH, len(codes)) - 1)
        release.set()
        assert done.wait(60)
    finally:
        ev.close()
    assert [r.correct for r in results] == [True] * len(codes)  # in request order
    assert sorted(seen) == list(range(len(codes)))
    # the first ran at once; the rest waited (or were submitted later, being shorter) and went longest first
    rest = calls[1:]
    assert rest == sorted(rest, key=len, reverse=True)


def test_weight_counts_the_workers_shares_of_memory_a_need_covers() -> None:
    room, workers = 80 << 30, 8  # a share: 10 GiB
    assert weight(4.0, 30 << 30, room, workers) == 12.0  # three shares
    assert weight(4.0, 1 << 30, room, workers) == 4.0  # less than a share counts as one
    assert weight(4.0, None, room, workers) == 4.0  # unknown need, or unknown room: the time alone
    assert weight(4.0, 30 << 30, None, workers) == 4.0


def test_a_short_evaluation_that_takes_most_of_the_memory_goes_before_a_longer_small_one(
    relu_task, relu_solution
) -> None:
    """Ranked by time alone, a large-memory evaluation of a short candidate came last and ran on
    after the others had finished; the rank weighs what its memory holds back."""
    big, small = relu_task, get_task("core/L1/gelu")
    ev = Evaluator(backend="interpreter", workers=1, start=False, cache=False)
    gate = ev._gates[0]
    gate.room = lambda: 80 << 30  # an 80 GiB device shared by eight workers
    gate._workers = 8
    ev._memory_book.need = lambda task, profile: (40 << 30) if task.id == big.id else (1 << 30)
    calls: list[str] = []
    release = threading.Event()

    def fake_run_on(handle, job, timeout, base):
        calls.append(job.task.id)
        if len(calls) == 1:
            release.wait(30)
        result = EvalResult.from_dict(base.to_dict())
        result.stage_durations["child_wall"] = 1.0
        return result

    ev._run_on = fake_run_on
    lines = sum(1 for line in relu_solution.splitlines() if line.strip())
    opener = EvalRequest(task=small, code=relu_solution)
    short_big = EvalRequest(task=big, code=relu_solution)  # four shares of its expected time
    long_small = EvalRequest(task=small, code=relu_solution + "\n# pad" * (2 * lines))  # 3x as long, one share
    try:
        first = threading.Thread(target=ev.evaluate, args=(opener,), daemon=True)
        first.start()
        _wait_for(lambda: len(calls) == 1)
        results: list[EvalResult] = []
        batch = threading.Thread(target=lambda: results.extend(ev.evaluate_many([long_small, short_big])), daemon=True)
        batch.start()
        _wait_for(lambda: ev._queue.waiting == 2)
        release.set()
        batch.join(60)
        first.join(60)
    finally:
        ev.close()
    assert calls[1:] == [big.id, small.id]
    assert len(results) == 2 and all("queued" in r.stage_durations for r in results)


def test_many_callers_each_get_a_worker_of_their_own_and_all_finish() -> None:
    import random

    rng = random.Random(5)
    held: set[str] = set()
    lock = threading.Lock()
    clashes: list[str] = []
    # a device admits a need while fewer than three workers are out (stands in for the memory gate)
    queue: WorkerQueue[str] = WorkerQueue(
        ["a", "b", "c", "d"], load=lambda w: 0, fits=lambda w, need: need is None or len(held) < 3 or need < 2
    )

    def caller(expected: float, need: int | None) -> None:
        worker, _ = queue.take(expected, need)
        with lock:
            if worker in held:
                clashes.append(worker)
            held.add(worker)
        time.sleep(rng.random() * 0.01)
        with lock:
            held.discard(worker)
        queue.give_back(worker)

    threads = [threading.Thread(target=caller, args=(rng.random() * 10, rng.choice([None, 1, 3]))) for _ in range(60)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not any(thread.is_alive() for thread in threads) and not clashes and queue.waiting == 0
