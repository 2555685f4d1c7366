"""The evaluation contract (evaluation/result.py): EvalResult's JSON round trip, EvalRequest across processes."""

from __future__ import annotations

import dataclasses
import json
import pickle

import pytest

from ascend_kernel_gym.evaluation.result import (
    HACK_ERROR_TYPES,
    ErrorType,
    EvalRequest,
    EvalResult,
    LaunchRecord,
    Stage,
)
from ascend_kernel_gym.tasks import get_task


def full_result() -> EvalResult:
    """A result with every field away from its default."""
    return EvalResult(
        task_id="core/L1/relu",
        backend="cuda",
        profile="full",
        code_hash="abc",
        stage=Stage.PERFORMANCE,
        format_ok=True,
        static_ok=True,
        compiled=True,
        correct=True,
        hack=True,
        hack_reasons=["torch_fallback: aten::relu"],
        error_type=ErrorType.TORCH_FALLBACK,
        error_message="PyTorch did the work",
        max_abs_err=1.5e-7,
        max_rel_err=0.0,
        trials_passed=4,
        trials_total=5,
        ref_ms=0.25,
        kernel_ms=0.125,
        speedup=2.0,
        timing={"rounds": [1.0, 2.0], "note": None},
        launches=[
            LaunchRecord("relu_kernel", [64, 1, 1], {"BLOCK": 1024}, 4, 2, [[1024, 1024], "float32"]),
            LaunchRecord("other", [1]),
        ],
        torch_ops=["aten::relu"],
        warnings=["w"],
        ascend_checks=[{"rule": "grid_oversubscribed", "value": 16000, "limit": None}],
        estimate={"est_ms": 0.1},
        stage_durations={"static": 0.01},
        device="NVIDIA H200",
        cache_hit=True,
        output_tail="printed",
    )


def test_every_field_survives_the_json_round_trip() -> None:
    result = full_result()
    assert {f.name for f in dataclasses.fields(EvalResult)} <= set(result.to_dict())
    text = result.to_json()
    back = EvalResult.from_json(text)
    assert back == result
    assert isinstance(back.stage, Stage) and isinstance(back.error_type, ErrorType)
    assert all(isinstance(launch, LaunchRecord) for launch in back.launches)
    data = json.loads(text)
    assert data["stage"] == "performance" and data["error_type"] == "torch_fallback"  # plain strings in JSON
    assert data["launches"][1] == {
        "kernel": "other",
        "grid": [1],
        "constexprs": {},
        "num_warps": None,
        "num_stages": None,
        "tensor_args": [],
    }


def test_none_fields_stay_none_and_missing_fields_take_their_defaults() -> None:
    result = EvalResult(task_id="t", backend="interpreter", profile="small", code_hash="h")
    back = EvalResult.from_json(result.to_json())
    assert back == result and back.speedup is None and back.max_abs_err is None and back.kernel_ms is None
    assert json.loads(result.to_json())["speedup"] is None
    minimal = EvalResult.from_dict({"task_id": "t", "backend": "b", "profile": "p", "code_hash": "h"})
    assert minimal.stage is Stage.FORMAT and minimal.error_type is ErrorType.NONE and minimal.launches == []
    # an estimate written as null by another tool still reads back as a dict (vector envs merge it)
    assert EvalResult.from_dict({**minimal.to_dict(), "estimate": None}).estimate == {}


def test_unknown_fields_and_values_are_refused() -> None:
    data = full_result().to_dict()
    with pytest.raises(ValueError, match=r"unknown fields \['speedup_x'\]"):
        EvalResult.from_dict({**data, "speedup_x": 3.0})
    with pytest.raises(ValueError, match="'fast'"):
        EvalResult.from_dict({**data, "stage": "fast"})
    with pytest.raises(ValueError, match="'oops'"):
        EvalResult.from_dict({**data, "error_type": "oops"})
    with pytest.raises(TypeError):
        EvalResult.from_dict({**data, "launches": [{"kernel": "k", "grid": [1], "colour": "red"}]})


def test_to_dict_is_a_copy() -> None:
    result = full_result()
    data = result.to_dict()
    data["launches"][0]["grid"].append(9)
    data["timing"]["rounds"].clear()
    assert result.launches[0].grid == [64, 1, 1] and result.timing["rounds"] == [1.0, 2.0]


@pytest.mark.parametrize(
    ("correct", "hack", "ok"), [(True, False, True), (True, True, False), (False, False, False), (False, True, False)]
)
def test_ok_means_correct_and_not_a_hack(correct: bool, hack: bool, ok: bool) -> None:
    assert EvalResult(task_id="t", backend="b", profile="p", code_hash="h", correct=correct, hack=hack).ok is ok


def test_enums_compare_with_their_strings_and_the_hack_set_is_closed() -> None:
    assert ErrorType.NONE == "none" and Stage.DONE == "done" and ErrorType("value_mismatch") is ErrorType.VALUE_MISMATCH
    assert HACK_ERROR_TYPES <= set(ErrorType)
    assert ErrorType.NONE not in HACK_ERROR_TYPES and ErrorType.HARNESS_ERROR not in HACK_ERROR_TYPES
    assert ErrorType.VALUE_MISMATCH not in HACK_ERROR_TYPES  # a wrong kernel is not a hack


def test_requests_and_results_cross_process_boundaries_by_pickle() -> None:
    task = get_task("core/L1/relu")
    request = EvalRequest(task=task, code="x = 1", profile="small", num_trials=None, seed=None, timeout_s=2.5)
    back = pickle.loads(pickle.dumps(request))
    assert back == request and back.task.source == task.source and back.num_trials is None
    assert EvalRequest(task=task, code="").measure_performance is True  # the default measures where it can
    result = full_result()
    assert pickle.loads(pickle.dumps(result)) == result


# --- issue 21, point 5: bounded results ----------------------------------------------------------
def test_a_result_within_the_bound_is_left_as_it_is() -> None:
    from ascend_kernel_gym.evaluation.result import bound_result

    result = full_result()
    before = result.to_json()
    assert bound_result(result) is result and result.to_json() == before


def test_a_16mb_constexpr_in_every_launch_record_is_cut_below_1mb_with_a_note() -> None:
    from ascend_kernel_gym.evaluation.result import MAX_RESULT_BYTES, RESULT_CUT_NOTE, bound_result

    big = "x" * (16 << 20)
    result = full_result()
    result.launches = [LaunchRecord("k", [1], {"NOTE": big, "BLOCK": 1024}) for _ in range(7)]
    result.output_tail = "p" * 300_000
    result.warnings = [f"warning {i}: " + "w" * 3000 for i in range(500)]
    verdict = {name: getattr(result, name) for name in ("correct", "hack", "error_type", "speedup", "trials_passed")}
    bound_result(result)
    text = result.to_json()
    assert len(text.encode()) <= MAX_RESULT_BYTES < 1 << 20
    note = result.warnings[-1]
    assert note.startswith(RESULT_CUT_NOTE) and "launches" in note and "output_tail" in note
    assert {name: getattr(result, name) for name in verdict} == verdict
    assert result.launches and result.launches[0].constexprs["BLOCK"] == 1024  # small values stay
    kept = result.launches[0].constexprs["NOTE"]
    assert len(kept) < 10_000 and kept.endswith("characters cut ...]")
    assert result.output_tail.endswith("p") and "characters cut" in result.output_tail  # the end is kept
    assert EvalResult.from_json(text).warnings[-1] == note  # still a valid result
