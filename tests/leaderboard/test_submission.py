"""Submission building, schema validation and the JSON round trip (hand-made runs, no evaluator)."""

from __future__ import annotations

import copy
import json

import pytest
from lb_helpers import episode, result, write_fake_run

from ascend_kernel_gym.leaderboard.records import sha256_text
from ascend_kernel_gym.leaderboard.submission import (
    SCHEMA_PATH,
    SubmissionError,
    build_submission,
    compute_digest,
    load_schema,
    read_submission,
    schema_errors,
    write_submission,
)

RELU, SIGMOID, GELU = "core/L1/relu", "core/L1/sigmoid", "core/L1/gelu"


@pytest.fixture
def cuda_run(tmp_path):
    records = [
        episode(RELU, 0, result(correct=True, speedup=1.5)),
        episode(RELU, 1, result(compiled=True), result(correct=True, speedup=2.5)),
        episode(SIGMOID, 0, result(compiled=False, error_type="compile_error")),
        episode(SIGMOID, 1, None),
        # GELU has no episode at all
    ]
    return write_fake_run(tmp_path / "run", records, task_ids=[RELU, SIGMOID, GELU], samples=2)


def test_schema_file_ships_with_the_package_and_is_a_valid_schema():
    from jsonschema import Draft202012Validator

    assert SCHEMA_PATH.is_file() and SCHEMA_PATH.parent.name == "leaderboard"
    Draft202012Validator.check_schema(load_schema())


def test_build_picks_the_best_kernel_over_samples_and_lists_missing_tasks(cuda_run):
    data = build_submission(cuda_run)
    assert schema_errors(data) == []
    by_id = {t["task_id"]: t for t in data["tasks"]}
    assert list(by_id) == [RELU, SIGMOID, GELU]
    relu = by_id[RELU]
    assert relu["sample"] == 1 and relu["turn"] == 1
    assert relu["claimed"]["speedup"] == 2.5 and relu["claimed"]["correct"] is True
    assert relu["code_sha256"] == sha256_text(relu["code"])
    assert by_id[SIGMOID]["claimed"]["correct"] is False and by_id[SIGMOID]["code"] is not None
    gelu = by_id[GELU]
    assert gelu["code"] is None and gelu["code_sha256"] is None
    assert gelu["claimed"]["error_type"] == "missing" and gelu["claimed"]["compiled"] is False
    # summary metrics over per-task best kernels: 1 of 3 correct and faster than 2x
    assert data["metrics"]["correct_rate"] == pytest.approx(1 / 3)
    assert data["metrics"]["fast_2"] == pytest.approx(1 / 3)
    assert data["metrics"]["geomean_speedup"] == pytest.approx(2.5)
    # run metrics over all samples: relu 2/2 correct, sigmoid 0/2, gelu 0/2
    assert data["run_metrics"]["correct_rate"] == pytest.approx(2 / 6)
    assert data["run_metrics"]["pass@1"] == pytest.approx((1.0 + 0 + 0) / 3)
    assert data["suite"]["task_count"] == 3 and data["backend"] == "cuda"
    assert data["device"]["name"] == "NVIDIA H200"
    assert set(data["versions"]) >= {"torch", "triton", "torch_npu", "python"}
    assert data["digest"] == {"algorithm": "sha256", "value": compute_digest(data)}


def test_round_trip_through_a_file(cuda_run, tmp_path):
    data = build_submission(cuda_run)
    path = write_submission(data, tmp_path / "sub.json")
    loaded = read_submission(path)
    assert loaded == data
    # the digest does not depend on formatting
    compact = tmp_path / "compact.json"
    compact.write_text(json.dumps(loaded, separators=(",", ":")))
    assert compute_digest(read_submission(compact)) == data["digest"]["value"]


def test_digest_changes_with_any_content_change(cuda_run):
    data = build_submission(cuda_run)
    edited = copy.deepcopy(data)
    edited["tasks"][0]["claimed"]["speedup"] = 2.6
    assert compute_digest(edited) != data["digest"]["value"]
    edited = copy.deepcopy(data)
    edited["agent"]["name"] = "someone else"
    assert compute_digest(edited) != data["digest"]["value"]


@pytest.mark.parametrize(
    ("mutate", "where"),
    [
        (lambda d: d.pop("digest"), "digest"),
        (lambda d: d["tasks"][0]["claimed"].__setitem__("speedup", -1.0), "speedup"),
        (lambda d: d["tasks"][0].__setitem__("surprise", 1), "surprise"),
        (lambda d: d["tasks"][0].__setitem__("code_sha256", "not-a-hash"), "code_sha256"),
        (lambda d: d.__setitem__("schema_version", 99), "schema_version"),
        (lambda d: d["tasks"][0]["claimed"].__setitem__("correct", "yes"), "correct"),
        (lambda d: d.__setitem__("backend", "tpu"), "backend"),
    ],
)
def test_schema_rejects_malformed_submissions(cuda_run, tmp_path, mutate, where):
    data = build_submission(cuda_run)
    mutate(data)
    errors = schema_errors(data)
    assert errors and any(where in e for e in errors), errors
    with pytest.raises(SubmissionError):
        write_submission(data, tmp_path / "bad.json")
    (tmp_path / "bad.json").write_text(json.dumps(data))
    with pytest.raises(SubmissionError, match="schema"):
        read_submission(tmp_path / "bad.json")


def test_write_refuses_a_stale_digest(cuda_run, tmp_path):
    data = build_submission(cuda_run)
    data["tasks"][0]["claimed"]["speedup"] = 9.0
    with pytest.raises(SubmissionError, match="digest"):
        write_submission(data, tmp_path / "sub.json")


def test_read_rejects_non_json(tmp_path):
    (tmp_path / "x.json").write_text("{not json")
    with pytest.raises(SubmissionError, match="not a JSON"):
        read_submission(tmp_path / "x.json")


def test_submit_cli(cuda_run, tmp_path, capsys):
    from ascend_kernel_gym.cli import main

    out = tmp_path / "s.json"
    assert main(["submit", str(cuda_run), "-o", str(out)]) == 0
    assert read_submission(out)["suite"]["task_count"] == 3
    assert "digest" in capsys.readouterr().out
    assert main(["submit", str(tmp_path / "nope"), "-o", str(out)]) == 2
