from __future__ import annotations

import math

import pytest

from ascend_kernel_gym.envs.rewards import (
    NEUTRAL_SPEEDUP,
    PRESETS,
    binary_score,
    default_score,
    drkernel_score,
    effective_speedup,
    format_failure_result,
    kevin_score,
    resolve_reward,
    step_reward,
    tiered_score,
)
from ascend_kernel_gym.evaluation.result import ErrorType, EvalResult, Stage


def make(kind: str, speedup: float | None = None, **extra) -> EvalResult:
    """Hand-made results for each rung of the cascade."""
    base = dict(task_id="t", backend="cuda", profile="full", code_hash="h")
    flags = {
        "no_code": dict(stage=Stage.FORMAT, error_type=ErrorType.NO_CODE),
        "static": dict(stage=Stage.STATIC, format_ok=True, error_type=ErrorType.SYNTAX),
        "compile": dict(stage=Stage.COMPILE, format_ok=True, static_ok=True, error_type=ErrorType.COMPILE_ERROR),
        "incorrect": dict(
            stage=Stage.CORRECTNESS, format_ok=True, static_ok=True, compiled=True, error_type=ErrorType.VALUE_MISMATCH
        ),
        "hack": dict(
            stage=Stage.CORRECTNESS, format_ok=True, static_ok=True, compiled=True, correct=True, hack=True,
            error_type=ErrorType.TORCH_FALLBACK,
        ),
        "correct": dict(stage=Stage.DONE, format_ok=True, static_ok=True, compiled=True, correct=True),
    }[kind]  # fmt: skip
    return EvalResult(**base, **flags, speedup=speedup, **extra)


FAILURES = ["no_code", "static", "compile", "incorrect"]


def test_default_tiers_are_ordered_and_match_the_docs() -> None:
    scores = [default_score(make(k)) for k in ["hack", *FAILURES]]
    assert scores == [-1.0, -0.8, -0.6, -0.4, -0.2]
    assert default_score(make("correct", 1.0)) == 0.5
    assert default_score(make("correct", 2.0)) == pytest.approx(0.75)
    assert default_score(make("correct", 0.5)) == pytest.approx(0.25)
    assert default_score(make("correct", 100.0)) == 1.0  # clipped at 4x
    assert default_score(make("correct", 0.01)) == 0.0  # clipped at 1/4x, still above incorrect
    assert default_score(make("correct", None)) == 0.5  # neutral speedup


def test_hack_with_fast_speedup_scores_like_incorrect_or_lower_everywhere() -> None:
    hack = make("hack", 10.0)
    incorrect = make("incorrect")
    for preset in PRESETS.values():
        assert preset.fn(hack) <= preset.fn(incorrect), preset.name


def test_out_of_bounds_write_scores_as_a_hack_and_a_read_as_a_failure() -> None:
    """``out_of_bounds`` is not a hack type: the result's own ``hack`` flag (set for a write) decides."""
    flags = dict(task_id="t", backend="interpreter", profile="small", code_hash="h", format_ok=True, static_ok=True)
    wrote = EvalResult(**flags, stage=Stage.COMPILE, error_type=ErrorType.OUT_OF_BOUNDS, hack=True)
    read = EvalResult(**flags, stage=Stage.COMPILE, error_type=ErrorType.OUT_OF_BOUNDS)
    assert default_score(wrote) == -1.0 and default_score(read) == -0.4  # the first call failed: compile tier
    for preset in PRESETS.values():  # scored like any other hack, and like any other failed first call
        assert preset.fn(wrote) == preset.fn(make("hack")), preset.name
        assert preset.fn(read) == preset.fn(make("compile")), preset.name


def test_kevin() -> None:
    assert kevin_score(make("correct", 2.0)) == pytest.approx(2.3)
    assert kevin_score(make("correct", None)) == pytest.approx(1.3)
    for kind in ["hack", *FAILURES]:
        assert kevin_score(make(kind, 5.0)) == 0.0


def test_drkernel_caps_speedup_and_adds_profile_ratio_only_when_reported() -> None:
    assert drkernel_score(make("correct", 2.0)) == pytest.approx(3.0)
    assert drkernel_score(make("correct", 10.0)) == pytest.approx(4.0)
    assert drkernel_score(make("correct", None)) == pytest.approx(2.0)
    assert drkernel_score(make("correct", 2.0, timing={"profile_ratio": 0.5})) == pytest.approx(3.5)
    assert drkernel_score(make("incorrect", 2.0, timing={"profile_ratio": 0.5})) == 0.0


def test_binary_needs_real_triton_and_correctness() -> None:
    assert binary_score(make("correct", 0.1)) == 1.0
    assert binary_score(make("hack")) == 0.0
    no_kernel = make("correct")
    no_kernel.static_ok = False
    assert binary_score(no_kernel) == 0.0
    for kind in FAILURES:
        assert binary_score(make(kind)) == 0.0


@pytest.mark.parametrize(
    ("speedup", "expected"),
    [(0.5, -0.1), (0.999, -0.1), (1.0, 0.2), (1.19, 0.2), (1.2, 0.4), (1.5, 0.6), (2.0, 0.8), (2.99, 0.8), (3.0, 1.0),
     (None, 0.2)],
)  # fmt: skip
def test_tiered_speedup_steps(speedup: float | None, expected: float) -> None:
    assert tiered_score(make("correct", speedup)) == expected


def test_tiered_failures() -> None:
    assert [tiered_score(make(k)) for k in FAILURES] == [-0.5, -0.5, -0.5, -0.3]
    assert tiered_score(make("hack", 5.0)) == -0.3


def test_format_failure_score_declared_per_preset() -> None:
    result = format_failure_result("t", "interpreter", "small", "no code")
    for preset in PRESETS.values():
        assert preset.fn(result) == preset.format_failure, preset.name


def test_effective_speedup_neutral_and_estimate_flag() -> None:
    r = make("correct", None, estimate={"est_speedup": 1.7})
    assert effective_speedup(r) == NEUTRAL_SPEEDUP
    assert effective_speedup(r, use_estimate=True) == 1.7
    assert effective_speedup(make("correct", 2.5), use_estimate=True) == 2.5  # measured wins
    assert effective_speedup(make("correct", float("nan"))) == NEUTRAL_SPEEDUP
    _, fn = resolve_reward("tiered", use_estimate=True)
    assert fn(r, None) == 0.6


def test_presets_accept_result_dicts() -> None:
    assert default_score(make("correct", 2.0).to_dict()) == pytest.approx(0.75)


def test_resolve_reward_errors_and_callables() -> None:
    with pytest.raises(ValueError, match="not a preset"):
        resolve_reward("nope")
    with pytest.raises(TypeError, match="callable"):
        resolve_reward(3)  # type: ignore[arg-type]

    def mine(result, task):
        return 7.0

    name, fn = resolve_reward(mine)
    assert name == "callable:mine" and fn(make("correct"), None) == 7.0


@pytest.mark.parametrize(
    "scores",
    [[-0.8, -0.4, 0.5, 0.2], [-0.8, -0.8, -0.6], [0.3], [1.0, -1.0, 0.5], [-1.0, -0.2, -0.6, -0.2]],
)
def test_improvement_rewards_sum_to_the_best_score(scores: list[float]) -> None:
    best = None
    rewards = []
    for t, score in enumerate(scores):
        after = score if best is None else max(best, score)
        rewards.append(step_reward("improvement", score, best, t == len(scores) - 1, after))
        best = after
    assert math.isclose(sum(rewards), max(scores), abs_tol=1e-12)
    assert all(r >= 0 for r in rewards[1:])


def test_score_and_terminal_modes() -> None:
    assert step_reward("score", -0.4, 0.5, False, 0.5) == -0.4
    assert step_reward("terminal", 0.9, 0.5, False, 0.9) == 0.0
    assert step_reward("terminal", -0.4, 0.5, True, 0.5) == 0.5
    with pytest.raises(ValueError, match="reward_mode"):
        step_reward("bogus", 0.0, None, False, 0.0)
