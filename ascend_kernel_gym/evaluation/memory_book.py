"""How much device memory one evaluation of a task needs, so that a shared device admits only
as many evaluations as fit.

Eight workers on an 80 GB H100 ran the level-2 and level-3 tasks out of memory together: in
the issue's 90-request burst 11 evaluations had to run again alone, and each such retry empties
the device of the other workers' evaluations first (2026-12-05). A fixed number of evaluations
per device fits the small tasks and not the large ones, so the gate (:class:`.concurrency.DeviceGate`)
admits by bytes, with the need this book estimates for each evaluation:

* **measured**: the largest need of the task's last :data:`WINDOW` evaluations on this
  evaluator that reached the timing stage, each the peak device memory its candidate's child
  and its judging reference child reserved together in any phase of the evaluation
  (:func:`measured_need`, from ``EvalResult.device_memory_mb``) plus one device context for
  each, or of an evaluation that ended earlier when that took more. Evaluations that ended
  early (a compile error, a wrong output) say little of what the next one that gets to time will
  take: while a task has only those, its need is the larger of them and the prior below;
* **before any**: the task file's size (``Task.profile_elements``, read from its AST, times the
  size of its dtype) times a ratio, plus the contexts. The ratio is the median of measured need
  over size among the tasks measured so far (those of at least :data:`RATIO_MIN_BYTES`),
  :data:`DEFAULT_RATIO` until :data:`RATIO_MIN_TASKS` are. Size predicts need loosely (the
  judge keeps every trial's outputs and slack, the timing stage a share of the free memory):
  a high percentile made the first evaluation of every large task run alone (the burst at eight
  workers held 64 of 90 evaluations back and ran at 1.76x of one worker), the median lets some
  of them run out of memory next to a neighbour and be run again (:func:`retry_need`);
* **unknown** (no size, and nothing measured): None, and the gate counts the evaluation as an
  equal share of the device.

The candidate's child reports its own peak; a candidate can understate it. That only lets more
evaluations onto the device at once: one that then runs out of memory next to a neighbour is
run again, with room for twice what it took and alone if that fails too
(:func:`.concurrency.neighbour_oom`), so no verdict depends on an estimate.

Imports neither torch nor triton.
"""

from __future__ import annotations

import statistics
import threading
from collections import deque

from ascend_kernel_gym.ascend.values import DTYPE_BYTES, TORCH_DTYPES
from ascend_kernel_gym.evaluation.result import EvalResult, Stage
from ascend_kernel_gym.tasks.task import Task

MIB = 1 << 20
#: device memory one process's context takes beyond what its allocator reserves (710 MiB seen
#: on an H100 with one hardware queue, 2026-12-05)
CONTEXT_BYTES = 768 * MIB
#: evaluations of one task whose largest need is its estimate
WINDOW = 8
#: need over task size assumed before enough tasks are measured: the median of the issue's tasks
#: at eight workers on an H100, their phases summed where they overlap (2026-12-06: 39 tasks of at
#: least 64 MiB, 7-90, median 26; the two peaks summed had given 14-113, median 43)
DEFAULT_RATIO = 26.0
#: tasks measured before their ratio replaces :data:`DEFAULT_RATIO`
RATIO_MIN_TASKS = 3
#: tasks smaller than this do not set the ratio (fixed costs dominate their need)
RATIO_MIN_BYTES = 64 * MIB
#: the ratio is kept within these bounds
RATIO_BOUNDS = (2.0, 64.0)
#: the phases of an evaluation whose peak device memory the candidate's child reports apart
#: (``candidate_<phase>`` in ``EvalResult.device_memory_mb``): up to the judge's plan, the
#: correctness trials, and what follows them (the timing stage)
CANDIDATE_PHASES = ("compile", "correctness", "timing")


def task_key(task: Task, profile: str) -> str:
    """The key a task's measurements are kept under (its content as the result cache names it)."""
    return f"{task.id}@{profile}#{task.source_hash}"


def task_bytes(task: Task, profile: str) -> int | None:
    """The bytes of the task's inputs and parameters in ``profile`` as its loader estimated them."""
    elements = task.profile_elements.get(profile)
    if not isinstance(elements, int) or elements <= 0:
        return None
    return elements * DTYPE_BYTES.get(TORCH_DTYPES.get(task.dtype, ""), 4)


def _mib(result: EvalResult, key: str) -> float | None:
    """``result.device_memory_mb[key]`` where it is a number of MiB (not negative), else None."""
    memory = result.device_memory_mb if isinstance(result.device_memory_mb, dict) else {}
    value = memory.get(key)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
        return float(value)
    return None


def measured_need(result: EvalResult) -> int | None:
    """The device memory ``result``'s evaluation took (its processes' peaks and contexts), or None.

    The two children's peaks do not come at the same time: the reference child builds the plan
    (its peak: the reference's runs and their temporaries) while the candidate's child compiles,
    judges with the plan's outputs while the candidate runs its trials, and lets go of them once
    every trial passed, before the timing stage. Where both report their phases
    (:data:`CANDIDATE_PHASES`, ``reference_plan`` / ``reference_judging``) the need is the largest
    of the three phases' sums; otherwise (an older judge, or a report cut short) the sum of the
    two peaks, which assumes they coincide.
    """
    candidate, reference = _mib(result, "candidate"), _mib(result, "reference")
    phases = {phase: _mib(result, f"candidate_{phase}") for phase in CANDIDATE_PHASES}
    if candidate is None and reference is None:
        return None
    if phases["compile"] is None:
        peak = (candidate or 0.0) + (reference or 0.0)
    else:
        plan = _mib(result, "reference_plan")
        judging = _mib(result, "reference_judging")
        if plan is None:  # a judge that reported one peak: count it in every phase it could be in
            plan = judging = reference or 0.0
        peak = max(
            plan + phases["compile"],
            (judging or 0.0) + (phases["correctness"] or 0.0),
            phases["timing"] or 0.0,
        )
    return int(peak * MIB) + 2 * CONTEXT_BYTES


#: a retry after an out-of-memory next to neighbours asks for this many times what its failed run took
RETRY_FACTOR = 2.0


def retry_need(expected: int | None, failed: int | None, room: int | None, workers: int) -> int | None:
    """What an evaluation that ran out of memory next to neighbours asks the device for when it
    runs again: the most of what it was expected to take, :data:`RETRY_FACTOR` times what its
    failed run took (a lower bound: it died on the way) and an equal share of the room; at most
    the room (None: the room is unknown, so is the need)."""
    if room is None:
        return None
    asked = max(expected or 0, int((failed or 0) * RETRY_FACTOR), room // max(1, workers))
    return min(room, asked)


class MemoryBook:
    """Per-task device-memory needs learned from finished evaluations (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        #: per task: the needs of its last evaluations that reached the timing stage, and of those
        #: that ended before it
        self._needs: dict[str, deque[int]] = {}
        self._early: dict[str, deque[int]] = {}
        self._ratios: dict[str, float] = {}
        #: per task: the judging reference child's peaks of its last evaluations that reached timing
        self._judging: dict[str, deque[int]] = {}

    def need(self, task: Task, profile: str) -> int | None:
        """The bytes an evaluation of ``task`` is expected to take on the device, or None if unknown."""
        key = task_key(task, profile)
        with self._lock:
            seen = self._needs.get(key)
            early = max(self._early.get(key) or [0])
            if seen:
                return max(max(seen), early)
            ratio = self._ratio()
        size = task_bytes(task, profile)
        if size is None:
            return early or None
        return max(early, int(size * ratio) + 2 * CONTEXT_BYTES)

    def observe(self, task: Task, profile: str, result: EvalResult) -> None:
        """Record what ``result``'s evaluation took (a result without a reading changes nothing)."""
        need = measured_need(result)
        if need is None:
            return
        key = task_key(task, profile)
        size = task_bytes(task, profile)
        with self._lock:
            if result.stage not in (Stage.PERFORMANCE, Stage.DONE):
                self._early.setdefault(key, deque(maxlen=WINDOW)).append(need)
                return
            self._needs.setdefault(key, deque(maxlen=WINDOW)).append(need)
            judging = _mib(result, "reference_judging")
            if judging:
                self._judging.setdefault(key, deque(maxlen=WINDOW)).append(int(judging * MIB))
            if size is not None and size >= RATIO_MIN_BYTES:
                ratio = (max(self._needs[key]) - 2 * CONTEXT_BYTES) / size
                self._ratios[key] = min(RATIO_BOUNDS[1], max(RATIO_BOUNDS[0], ratio))

    def idle_in_timing(self, task: Task, profile: str) -> int:
        """Bytes of an evaluation's reservation that sit idle while it times: its judging child's
        peak, which the need counts with the correctness trials, while the judge lets go of the
        reference's outputs once every trial passed (the least of the task's recent evaluations;
        0 until one reached the timing stage)."""
        with self._lock:
            seen = self._judging.get(task_key(task, profile))
            return min(seen) if seen else 0

    def _ratio(self) -> float:
        if len(self._ratios) < RATIO_MIN_TASKS:
            return DEFAULT_RATIO
        return statistics.median(self._ratios.values())
