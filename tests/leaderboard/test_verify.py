"""``verify_submission``: integrity checks and claim-vs-rerun comparison with a stub evaluator.

The stub stands in for re-running on a GPU (this machine has none) so the speed comparison on
the *same device type* can be exercised; the real-evaluator tamper tests on the interpreter are in
test_eval_end_to_end.py.
"""

from __future__ import annotations

import copy

import pytest
from lb_helpers import episode, result, write_fake_run

from ascend_kernel_gym.backends import detect
from ascend_kernel_gym.evaluation.result import ErrorType, EvalResult, Stage
from ascend_kernel_gym.leaderboard.records import sha256_text
from ascend_kernel_gym.leaderboard.submission import build_submission, metrics_from_entries, seal
from ascend_kernel_gym.leaderboard.verify import integrity_problems, verify_submission

RELU, SIGMOID = "core/L1/relu", "core/L1/sigmoid"


class StubEvaluator:
    """Re-run results keyed by a marker in the code: GOOD[:speedup] passes, anything else fails."""

    def __init__(self) -> None:
        self.requests = []

    def evaluate_many(self, requests):
        self.requests.extend(requests)
        out = []
        for req in requests:
            base = dict(
                task_id=req.task.id, backend="cuda", profile="full", code_hash="h", format_ok=True, static_ok=True
            )
            if req.code.startswith("GOOD"):
                speed = float(req.code.split(":")[1]) if ":" in req.code else 1.0
                out.append(EvalResult(**base, stage=Stage.DONE, compiled=True, correct=True, speedup=speed))
            else:
                out.append(
                    EvalResult(
                        **base,
                        stage=Stage.CORRECTNESS,
                        compiled=True,
                        error_type=ErrorType.VALUE_MISMATCH,
                        error_message="max abs err 3.2",
                    )
                )
        return out


@pytest.fixture
def fake_h200(monkeypatch):
    """Pretend this machine has the submission's GPU."""
    monkeypatch.setattr(detect, "resolve_backend", lambda backend="auto": "cuda")
    monkeypatch.setattr(
        detect, "device_info", lambda backend: detect.DeviceInfo(backend="cuda", name="NVIDIA H200", device="cuda")
    )


@pytest.fixture
def submission(tmp_path):
    records = [
        episode(RELU, 0, result(correct=True, speedup=1.2)),
        episode(SIGMOID, 0, result(compiled=True)),
    ]
    data = build_submission(write_fake_run(tmp_path / "run", records, task_ids=[RELU, SIGMOID]))
    # give the kernels stub-readable code: relu re-measures at 1.0x, sigmoid fails
    data["tasks"][0]["code"] = "GOOD:1.0"
    data["tasks"][1]["code"] = "BAD"
    for task in data["tasks"]:
        task["code_sha256"] = sha256_text(task["code"])
    return seal(data)


def forge(data, mutate):
    """What a determined editor does: change claims, fix the summary, hashes and digest."""
    forged = copy.deepcopy(data)
    mutate(forged)
    for task in forged["tasks"]:
        if task["code"] is not None:
            task["code_sha256"] = sha256_text(task["code"])
    forged["metrics"] = metrics_from_entries(forged["tasks"], forged["backend"])
    return seal(forged)


def test_honest_submission_is_accepted(submission, fake_h200):
    assert integrity_problems(submission) == []
    stub = StubEvaluator()
    report = verify_submission(submission, evaluator=stub)
    assert report.accepted, report.reasons
    assert report.speed_comparable
    assert [r.code for r in stub.requests] == ["GOOD:1.0", "BAD"]
    relu = report.tasks[0]
    assert relu.verdict == "agree" and relu.speed == "ok"  # claimed 1.2 vs 1.0 is within 30%


def test_failing_kernel_claimed_correct_is_rejected(submission, fake_h200):
    def claim_sigmoid_correct(d):
        d["tasks"][1]["claimed"].update(correct=True, error_type="none")

    forged = forge(submission, claim_sigmoid_correct)
    assert integrity_problems(forged) == []  # every hash and the digest are consistent ...
    report = verify_submission(forged, evaluator=StubEvaluator())
    assert not report.accepted  # ... but the re-run disagrees
    reasons = [r for r in report.reasons if r.startswith(SIGMOID)]
    assert reasons and "claimed correct, but fails here" in reasons[0] and "value_mismatch" in reasons[0]


def test_inflated_speedup_on_the_same_device_is_rejected(submission, fake_h200):
    forged = forge(submission, lambda d: d["tasks"][0]["claimed"].update(speedup=2.5))
    report = verify_submission(forged, evaluator=StubEvaluator())
    assert not report.accepted
    assert report.tasks[0].speed == "inflated"
    assert any("speedup inflated: claimed 2.5x, measured 1x" in r for r in report.reasons)
    # a looser tolerance accepts it
    assert verify_submission(forged, evaluator=StubEvaluator(), speedup_tolerance=1.6).accepted


def test_speed_on_another_device_is_not_comparable(submission, monkeypatch):
    monkeypatch.setattr(detect, "resolve_backend", lambda backend="auto": "cuda")
    monkeypatch.setattr(
        detect, "device_info", lambda backend: detect.DeviceInfo(backend="cuda", name="NVIDIA A100", device="cuda")
    )
    forged = forge(submission, lambda d: d["tasks"][0]["claimed"].update(speedup=2.5))
    report = verify_submission(forged, evaluator=StubEvaluator())
    assert report.accepted and not report.speed_comparable
    assert report.tasks[0].speed == "not comparable"


def test_code_edited_after_the_run_is_rejected_without_rerun(submission, fake_h200):
    edited = copy.deepcopy(submission)
    edited["tasks"][1]["code"] = "GOOD:1.0"  # swapped in a better kernel, hash left alone
    stub = StubEvaluator()
    report = verify_submission(seal(edited), evaluator=stub)
    assert not report.accepted and not report.rerun and stub.requests == []
    assert any("code sha256 mismatch" in r for r in report.reasons)


def test_naive_claim_edit_breaks_the_digest(submission, fake_h200):
    edited = copy.deepcopy(submission)
    edited["tasks"][0]["claimed"]["speedup"] = 5.0
    report = verify_submission(edited, evaluator=StubEvaluator())
    assert not report.accepted
    assert any("content digest mismatch" in r for r in report.reasons)


def test_summary_metrics_must_match_per_task_claims(submission):
    edited = copy.deepcopy(submission)
    edited["metrics"]["correct_rate"] = 1.0
    problems = integrity_problems(seal(edited))
    assert any("summary metrics do not match" in p and "correct_rate" in p for p in problems)


def test_interpreter_submissions_cannot_claim_speedups(submission):
    def to_interpreter(d):
        d["backend"] = "interpreter"
        d["device"]["backend"] = "interpreter"
        for task in d["tasks"]:
            task["claimed"].update(speedup=None, ref_ms=None, kernel_ms=None)

    forged = forge(submission, to_interpreter)
    assert integrity_problems(forged) == []
    forged = forge(forged, lambda d: d["tasks"][0]["claimed"].update(speedup=3.0))
    assert any("measures no speed" in p for p in integrity_problems(forged))


def test_changed_task_file_is_rejected(submission, fake_h200):
    forged = forge(submission, lambda d: d["tasks"][0].update(task_sha256="0" * 64))
    report = verify_submission(forged, evaluator=StubEvaluator())
    assert not report.accepted and not report.rerun
    assert any("task file differs" in r for r in report.reasons)


def test_not_an_object_is_rejected():
    report = verify_submission(["not", "a", "submission"], evaluator=StubEvaluator())
    assert not report.accepted and report.reasons


def test_negative_tolerance_is_a_usage_error(submission):
    with pytest.raises(ValueError, match="speedup_tolerance"):
        verify_submission(submission, speedup_tolerance=-0.1)
