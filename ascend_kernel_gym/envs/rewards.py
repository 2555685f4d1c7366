"""Reward presets: a kernel's evaluation result -> a score (a float).

A *score* judges one attempt. The env turns per-turn scores into per-step rewards with a
*reward mode* (:func:`step_reward`): ``improvement`` (the rise of the best score, so an
episode's return equals the best score reached), ``score`` (each turn's own score) or
``terminal`` (the best score, paid once at the end).

Presets (formulas in each function's docstring and in docs/rewards.md):

=========  ============================================================  ===========================
name       score                                                         source
=========  ============================================================  ===========================
default    tiers -1 / -0.8 / -0.6 / -0.4 / -0.2 for hack / no code /     this project
           static / compile / incorrect; correct:
           0.5 + 0.25 * clip(log2(speedup), -2, 2)  (in [0, 1])
kevin      0.3 * C + speedup * C                                          Kevin-32B (arXiv 2507.11948)
drkernel   C + C * min(speedup, 3) [+ C * PR when profiled]               Dr. Kernel (arXiv 2602.05885)
binary     1 if C and the code holds a real Triton kernel, else 0         AutoTriton (arXiv 2507.05687)
tiered     -0.5 compile fail, -0.3 incorrect, -0.1 slower, then           Dr. Kernel tiered variant
           0.2 / 0.4 / 0.6 / 0.8 / 1.0 at speedup >= 1 / 1.2 / 1.5 / 2 / 3
=========  ============================================================  ===========================

``C`` is 1 for a correct kernel that is not a hack (``EvalResult.ok``), else 0: every preset
scores a hack at most like an incorrect kernel (``default`` scores it below everything).

Where no speedup was measured (the interpreter backend, or ``measure_performance=False``)
every preset uses a *neutral* speedup of exactly 1.0: the kernel is scored as if it ran as
fast as the reference. With ``use_estimate=True`` the interpreter's cost-model estimate
(``result.estimate["est_speedup"]``) is used instead when present; it is off by default
because the estimate is a proxy, not a measurement.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from ascend_kernel_gym.evaluation.result import ErrorType, EvalResult, Stage
from ascend_kernel_gym.tasks.task import Task

__all__ = [
    "NEUTRAL_SPEEDUP",
    "PRESETS",
    "REWARD_MODES",
    "RewardFn",
    "RewardPreset",
    "as_result",
    "binary_score",
    "default_score",
    "drkernel_score",
    "effective_speedup",
    "format_failure_result",
    "kevin_score",
    "resolve_reward",
    "step_reward",
    "tiered_score",
]

#: The speedup every preset assumes when none was measured.
NEUTRAL_SPEEDUP = 1.0

#: Step reward modes understood by :func:`step_reward`.
REWARD_MODES = ("improvement", "score", "terminal")

ResultLike = EvalResult | dict[str, Any]
#: A reward function: (evaluation result, task) -> score.
RewardFn = Callable[[EvalResult, Task], float]


def as_result(result: ResultLike) -> EvalResult:
    """Accept an :class:`EvalResult` or its ``to_dict()`` form."""
    if isinstance(result, EvalResult):
        return result
    if isinstance(result, dict):
        return EvalResult.from_dict(result)
    raise TypeError(f"expected an EvalResult or its dict, got {type(result).__name__}")


def effective_speedup(result: EvalResult, use_estimate: bool = False) -> float:
    """The speedup a preset should use.

    The measured ``result.speedup`` when there is one (finite and > 0); else, with
    ``use_estimate``, the cost model's ``result.estimate["est_speedup"]`` when present; else
    :data:`NEUTRAL_SPEEDUP` (1.0).
    """
    if _positive_finite(result.speedup):
        return float(result.speedup)  # type: ignore[arg-type]
    if use_estimate and result.estimate:
        estimate = result.estimate.get("est_speedup")
        if _positive_finite(estimate):
            return float(estimate)
    return NEUTRAL_SPEEDUP


def _positive_finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def _correct(result: EvalResult) -> float:
    """``C``: 1.0 for a correct, non-hack kernel, else 0.0."""
    return 1.0 if result.correct and not result.hack else 0.0


# ----------------------------------------------------------------------------------- presets


#: Scores of the failure tiers of the ``default`` preset.
DEFAULT_TIERS: dict[str, float] = {
    "hack": -1.0,
    "no_code": -0.8,
    "static": -0.6,
    "compile": -0.4,
    "incorrect": -0.2,
}


def default_score(result: ResultLike, task: Task | None = None, *, use_estimate: bool = False) -> float:
    """This project's default: ordered failure tiers plus a bounded log-speedup for correct kernels.

    ::

        hack (any anti-hack check fired)              -1.0
        no code block (format failure)                -0.8
        static check failed (syntax, no ModelNew...)  -0.6
        did not compile / first call failed           -0.4
        ran but incorrect                             -0.2
        correct                                        0.5 + 0.25 * clip(log2(speedup), -2, 2)   in [0, 1]

    Why: the tiers follow the evaluation cascade, so every step of progress (format -> static
    -> compile -> correct) is rewarded, as in Dr. Kernel's tiered reward; any correct kernel,
    even 4x slower than PyTorch, outscores every incorrect one, so speed is never bought with
    correctness; the log makes 2x faster and 2x slower symmetric, and the clip at 4x keeps
    timing noise and outliers (tiny kernels, harness exploits of the CUDA-L1 kind) from
    dominating a return; a hack scores below giving up. Without a measured speedup (the
    interpreter) log2(1.0) = 0, so a correct kernel scores 0.5.
    """
    r = as_result(result)
    if r.hack:
        return DEFAULT_TIERS["hack"]
    if not r.format_ok or r.error_type == ErrorType.NO_CODE:
        return DEFAULT_TIERS["no_code"]
    if not r.static_ok:
        return DEFAULT_TIERS["static"]
    if not r.compiled:
        return DEFAULT_TIERS["compile"]
    if not r.correct:
        return DEFAULT_TIERS["incorrect"]
    log_speedup = math.log2(effective_speedup(r, use_estimate))
    return 0.5 + 0.25 * max(-2.0, min(2.0, log_speedup))


def kevin_score(result: ResultLike, task: Task | None = None, *, use_estimate: bool = False) -> float:
    """Kevin-32B's kernel score: ``S = 0.3 * C + speedup * C``.

    Source: Kevin-32B (Cognition; arXiv 2507.11948). ``C`` = correct and not a hack (Kevin gives
    0 to answers that use PyTorch functional ops). Unbounded above. Without a measured speedup:
    ``0.3 + 1.0 = 1.3`` for a correct kernel.
    """
    r = as_result(result)
    c = _correct(r)
    return 0.3 * c + effective_speedup(r, use_estimate) * c


def drkernel_score(result: ResultLike, task: Task | None = None, *, use_estimate: bool = False) -> float:
    """Dr. Kernel's reward: ``R = C + C * min(speedup, 3) + C * PR``.

    Source: Dr. Kernel / KernelGYM (arXiv 2602.05885). ``PR`` is the share of device time spent
    in the candidate's own kernels (profiler). The term is added only when the evaluator
    reports it as ``result.timing["profile_ratio"]`` (a number in [0, 1]); otherwise it is
    omitted (not counted as 0 or 1), so the maximum is 4 instead of 5. Without a measured
    speedup: ``1 + 1 = 2.0`` for a correct kernel.
    """
    r = as_result(result)
    c = _correct(r)
    score = c + c * min(effective_speedup(r, use_estimate), 3.0)
    ratio = r.timing.get("profile_ratio") if isinstance(r.timing, dict) else None
    if c and isinstance(ratio, (int, float)) and not isinstance(ratio, bool) and math.isfinite(ratio):
        score += c * max(0.0, min(1.0, float(ratio)))
    return score


def binary_score(result: ResultLike, task: Task | None = None, *, use_estimate: bool = False) -> float:
    """AutoTriton's rule reward: 1 iff the answer is real Triton and passes the tests, else 0.

    Source: AutoTriton (arXiv 2507.05687), which checks for ``@triton.jit`` and runs the tests.
    Here "real Triton" is stronger: the static stage found a ``@triton.jit`` kernel
    (``static_ok``) and no anti-hack check fired, which includes the proof that the
    candidate's own kernel launched (a decoy kernel that is never called is a hack). Speed is
    ignored.
    """
    r = as_result(result)
    return 1.0 if r.static_ok and r.correct and not r.hack else 0.0


#: Dr. Kernel's tiered scores for correct kernels: (minimum speedup, score), best first.
TIERED_SPEEDUP_STEPS: tuple[tuple[float, float], ...] = ((3.0, 1.0), (2.0, 0.8), (1.5, 0.6), (1.2, 0.4), (1.0, 0.2))


def tiered_score(result: ResultLike, task: Task | None = None, *, use_estimate: bool = False) -> float:
    """Dr. Kernel's tiered reward.

    ::

        no code / static failure / compile failure    -0.5
        incorrect (hacks count as incorrect)          -0.3
        correct but slower than the reference         -0.1
        correct, speedup >= 1 / 1.2 / 1.5 / 2 / 3       0.2 / 0.4 / 0.6 / 0.8 / 1.0

    Source: Dr. Kernel (arXiv 2602.05885). Without a measured speedup the neutral 1.0 gives 0.2.
    """
    r = as_result(result)
    if r.hack:
        return -0.3
    if not (r.format_ok and r.static_ok and r.compiled):
        return -0.5
    if not r.correct:
        return -0.3
    speedup = effective_speedup(r, use_estimate)
    for threshold, score in TIERED_SPEEDUP_STEPS:
        if speedup >= threshold:
            return score
    return -0.1


# ----------------------------------------------------------------------------------- registry


@dataclass(frozen=True)
class RewardPreset:
    """A named scoring rule with its formula and source (shown in docs and ``info``)."""

    name: str
    fn: Callable[..., float]
    formula: str
    source: str
    #: The score of a format failure (no code block) under this preset.
    format_failure: float


PRESETS: dict[str, RewardPreset] = {
    "default": RewardPreset(
        "default",
        default_score,
        "tiers -1 hack / -0.8 no code / -0.6 static / -0.4 compile / -0.2 incorrect; "
        "correct: 0.5 + 0.25*clip(log2(speedup), -2, 2)",
        "ascend-kernel-gym",
        DEFAULT_TIERS["no_code"],
    ),
    "kevin": RewardPreset("kevin", kevin_score, "0.3*C + speedup*C", "Kevin-32B, arXiv 2507.11948", 0.0),
    "drkernel": RewardPreset(
        "drkernel", drkernel_score, "C + C*min(speedup, 3) [+ C*PR if profiled]", "Dr. Kernel, arXiv 2602.05885", 0.0
    ),
    "binary": RewardPreset(
        "binary", binary_score, "1 if correct, not a hack and real Triton, else 0", "AutoTriton, arXiv 2507.05687", 0.0
    ),
    "tiered": RewardPreset(
        "tiered",
        tiered_score,
        "-0.5 compile fail / -0.3 incorrect / -0.1 slower / 0.2..1.0 at speedup >= 1, 1.2, 1.5, 2, 3",
        "Dr. Kernel (tiered), arXiv 2602.05885",
        -0.5,
    ),
}


def resolve_reward(reward: str | Callable[..., float], use_estimate: bool = False) -> tuple[str, RewardFn]:
    """Turn the env's ``reward`` argument into ``(name, fn(result, task) -> float)``.

    Args:
        reward: a preset name (see :data:`PRESETS`) or a callable ``(EvalResult, Task) -> float``.
        use_estimate: presets use the cost-model speedup estimate when nothing was measured.

    Raises:
        ValueError: unknown preset name.
        TypeError: neither a string nor a callable.
    """
    if isinstance(reward, str):
        preset = PRESETS.get(reward)
        if preset is None:
            raise ValueError(f"reward={reward!r} is not a preset; choose one of {sorted(PRESETS)} or pass a callable")
        return preset.name, partial(preset.fn, use_estimate=use_estimate)
    if callable(reward):
        name = getattr(reward, "__name__", None) or type(reward).__name__
        return f"callable:{name}", reward
    raise TypeError(f"reward must be a preset name or a callable (result, task) -> float, got {type(reward).__name__}")


def format_failure_result(task_id: str, backend: str, profile: str, message: str) -> EvalResult:
    """The result the env records for an answer without a code block (no evaluation is run)."""
    return EvalResult(
        task_id=task_id,
        backend=backend,
        profile=profile,
        code_hash="",
        stage=Stage.FORMAT,
        format_ok=False,
        error_type=ErrorType.NO_CODE,
        error_message=message,
    )


# ----------------------------------------------------------------------------------- modes


def step_reward(mode: str, score: float, best_before: float | None, last_step: bool, best_after: float) -> float:
    """The step reward of one turn.

    Args:
        mode: ``improvement``, ``score`` or ``terminal``.
        score: this turn's score.
        best_before: the best score before this turn (``None`` on the first turn).
        last_step: whether the episode ends with this turn.
        best_after: the best score after this turn.

    Returns:
        * ``improvement``: ``score`` on the first turn, then ``max(0, score - best_before)``. The
          sum telescopes to the best score reached, negative scores included:
          ``r_1 + sum_{t>1} (best_t - best_{t-1}) = best_T``.
        * ``score``: ``score``.
        * ``terminal``: 0 until the last step, then ``best_after``.
    """
    if mode == "improvement":
        return score if best_before is None else max(0.0, score - best_before)
    if mode == "score":
        return score
    if mode == "terminal":
        return best_after if last_step else 0.0
    raise ValueError(f"reward_mode must be one of {REWARD_MODES}, got {mode!r}")
