"""Which waiting evaluation gets the next free worker: the one that takes up most of a device.

An RL step hands the evaluator a batch of mixed tasks at once. Handed out in the order they came,
the slowest evaluations of a batch can come last and run on after every other worker is idle:
in the issue's 90-request burst at eight workers on an H100 (2026-12-06), the level-3 tasks came
last in the interleaved order, and for the last 26 of the burst's 71 s one to three evaluations
were running. Handing the free worker to the waiting evaluation with the longest expected run
(longest processing time first, the classic rule for a short makespan) lets the short ones fill
in around the long ones at the end.

* :class:`DurationBook` expects how long an evaluation's child runs: the median of the task's
  last :data:`WINDOW` evaluations on this evaluator, else a prior from the candidate's code and
  the task's level (:func:`prior_s`; only the order of the expectations matters).
* :func:`weight` ranks the waiting evaluations: the expected time, times the number of workers'
  shares of the device's memory the evaluation's need covers (at least one). An evaluation that
  takes a quarter of an H100's memory holds back a second worker as surely as a long one does,
  and ranked by time alone it came last: in an eight-worker burst on an H100 (2026-12-06) a
  level-2 softmax over a causal mask (29 GB measured) asked for a worker at 5 s, got one at 60 s
  and was the burst's last result, 2.6 s after the one before.
* :class:`WorkerQueue` hands out idle workers: to the waiting evaluation of the largest weight
  *that its device would admit now* (:meth:`.concurrency.DeviceGate.fits`, by the memory book's
  need). The first version ignored memory, and at eight workers on an H100 (2026-12-06) it made the burst
  slower (81 s against 71 s): the level-3 and large level-2 evaluations, first in line, took the
  workers and then waited for device memory, and for 25 s one to three evaluations ran. Now one
  that does not fit yet lets a smaller one that does go by, and waits in line without holding a
  worker. Holding the smaller ones back for a large one passed over for 5 s (a reservation) was
  tried and taken out (2026-12-06): while decoder blocks held the memory, a quarter of the
  burst's worker-seconds went idle, and its eight-worker bursts took 60.8-80.1 s against
  62.0-65.7 s in the call before without it (a simulation from the measured times and needs
  agreed). An evaluation waiting longer than :data:`STARVE_S` goes before every younger one,
  fitting or not (the device's gate then holds later ones back until it fits), so neither a
  stream of long evaluations nor one of small ones can hold an evaluation back for ever. With
  as many callers as workers there is little choice; ``Evaluator.evaluate_many`` submits more.

Of the idle workers whose device admits it, an evaluation gets the one on the device with the
fewest evaluations. The order only decides who goes first; every result is still returned to its
caller, and ``evaluate_many`` still returns them in request order.

Imports neither torch nor triton.
"""

from __future__ import annotations

import itertools
import statistics
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from ascend_kernel_gym.evaluation.memory_book import task_key
from ascend_kernel_gym.evaluation.result import EvalResult
from ascend_kernel_gym.tasks.task import Task

#: evaluations of one task whose median child time is its expectation
WINDOW = 8
#: a waiting evaluation older than this goes before all younger ones, whatever their expectation
STARVE_S = 60.0
#: the prior's seconds per line of candidate code and level of the task (one worker of an H100,
#: 2026-12-06: about 1 s for a 33-line level-1 solution, 16 s for a 183-line level-3 block)
PRIOR_S_PER_LINE_LEVEL = 0.03
#: the prior's floor (an empty or one-line answer still starts a child)
PRIOR_MIN_S = 0.5
#: how often callers look again while a worker is idle and none of them may take it
POLL_S = 0.25

H = TypeVar("H")


def weight(expected_s: float, need: int | None, room: int | None, workers: int) -> float:
    """How much of a device an evaluation takes up, in worker-seconds: ``expected_s`` times the
    workers' shares of the device's ``room`` (bytes) that its memory ``need`` covers, at least one
    share; ``expected_s`` alone when the need or the room is unknown."""
    if need is None or not room or room <= 0:
        return float(expected_s)
    return float(expected_s) * max(1.0, need * max(1, workers) / room)


def prior_s(task: Task, code: str) -> float:
    """The expected child seconds of an evaluation of ``code`` for ``task`` before any was measured.

    Longer candidates hold more kernels to compile, and higher levels run more operators per trial;
    the figure is rough, and is replaced by the task's measured times once there are some.
    """
    lines = sum(1 for line in code.splitlines() if line.strip())
    return max(PRIOR_MIN_S, PRIOR_S_PER_LINE_LEVEL * lines * max(1, int(task.level or 1)))


class DurationBook:
    """Per-task child times learned from finished evaluations (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seconds: dict[str, deque[float]] = {}

    def expected_s(self, task: Task, profile: str, code: str) -> float:
        """The seconds an evaluation of ``code`` for ``task`` is expected to keep its worker."""
        with self._lock:
            seen = self._seconds.get(task_key(task, profile))
            if seen:
                return statistics.median(seen)
        return prior_s(task, code)

    def observe(self, task: Task, profile: str, result: EvalResult) -> None:
        """Record how long ``result``'s child ran (a result without a child time changes nothing)."""
        seconds = result.stage_durations.get("child_wall")
        if not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or not seconds > 0:
            return
        with self._lock:
            self._seconds.setdefault(task_key(task, profile), deque(maxlen=WINDOW)).append(float(seconds))


@dataclass
class _Waiter:
    #: the larger goes first (:func:`weight`)
    rank: float
    need: int | None
    asked_at: float
    seq: int
    #: passed over at some time because its device would not admit it
    held_for_memory: bool = False


class WorkerQueue(Generic[H]):
    """Idle workers, handed to the waiting caller that goes first (see the module docstring).

    Args:
        workers: the workers, all idle at first.
        load: a worker's device load; of the idle workers a caller may take, the one with the
            lowest is handed out.
        fits: ``fits(worker, need)``: whether an evaluation expected to take ``need`` bytes of
            device memory would be admitted on ``worker``'s device now (None: always).
        starve_s: waiting longer than this puts a caller before every younger one.
    """

    def __init__(
        self,
        workers: list[H],
        load: Callable[[H], int],
        fits: Callable[[H, int | None], bool] | None = None,
        starve_s: float = STARVE_S,
    ) -> None:
        self._idle = list(workers)
        self._load = load
        self._fits = fits
        self._starve_s = starve_s
        self._cond = threading.Condition()
        self._waiting: list[_Waiter] = []
        self._seq = itertools.count()
        #: bumped at every change of the waiting callers or the idle workers
        self._version = 0
        #: the last decision: (version, when, (caller, worker) or None)
        self._decided: tuple[int, float, tuple[_Waiter, H] | None] | None = None

    @property
    def waiting(self) -> int:
        """Callers waiting for a worker now."""
        with self._cond:
            return len(self._waiting)

    def _placed(self, waiter: _Waiter, ranked: list[H], seen: dict[tuple[int, int | None], bool]) -> H | None:
        """The idle worker ``waiter`` would run on now: the first of ``ranked`` (the idle workers,
        least loaded first) whose device admits it (``seen``: the admissions asked already in
        this decision, per worker and need)."""
        for worker in ranked:
            if self._fits is None:
                return worker
            key = (id(worker), waiter.need)
            if key not in seen:
                seen[key] = self._fits(worker, waiter.need)
            if seen[key]:
                return worker
        return None

    def _decide(self, now: float) -> tuple[_Waiter, H] | None:
        """Who takes which idle worker now, or None while nobody fits.

        A starving caller goes first, fitting or not (the gate then holds the others back for it).
        Otherwise the caller of the largest rank that fits on an idle worker's device goes; a larger
        one that does not fit yet lets it by rather than hold a worker while it waits for memory.
        """
        ranked = sorted(self._idle, key=self._load)  # once per decision: a load is read under the gate's lock
        starved = [w for w in self._waiting if now - w.asked_at > self._starve_s]
        if starved:
            return min(starved, key=lambda w: w.seq), ranked[0]
        seen: dict[tuple[int, int | None], bool] = {}
        for waiter in sorted(self._waiting, key=lambda w: (-w.rank, w.seq)):
            worker = self._placed(waiter, ranked, seen)
            if worker is not None:
                return waiter, worker
            waiter.held_for_memory = True
        return None

    def _turn(self, me: _Waiter, now: float) -> H | None:
        """The worker ``me`` takes now, or None. One decision serves every caller until the queue
        changes or :data:`POLL_S` passes (asking the devices' gates is not free: a memory reading)."""
        decided = self._decided
        if decided is None or decided[0] != self._version or now - decided[1] > POLL_S:
            choice = self._decide(now)
            decided = self._decided = (self._version, now, choice)
        choice = decided[2]
        return choice[1] if choice is not None and choice[0] is me else None

    def take(self, rank: float = 0.0, need: int | None = None) -> tuple[H, bool]:
        """An idle worker, once this caller's turn has come (blocks until then), and whether the
        caller was held back because its device would not admit it. ``rank``: the larger goes
        first (:func:`weight`, or the expected seconds); ``need``: the device memory the
        evaluation is expected to take (None: unknown)."""
        with self._cond:
            me = _Waiter(float(rank), need, time.monotonic(), next(self._seq))
            self._waiting.append(me)
            self._version += 1
            try:
                while not self._idle or (worker := self._turn(me, time.monotonic())) is None:
                    # Whose turn it is can change without a notice here (a caller starts to starve,
                    # device memory frees up): while a worker is idle, look again now and then.
                    self._cond.wait(timeout=POLL_S if self._idle else None)
                self._idle.remove(worker)
            finally:
                self._waiting.remove(me)
                self._version += 1
                self._cond.notify_all()  # the next in line may find a worker left
            return worker, me.held_for_memory

    def give_back(self, worker: H) -> None:
        """Make ``worker`` idle again."""
        with self._cond:
            self._idle.append(worker)
            self._version += 1
            self._cond.notify_all()
