"""Run directories (leaderboard/records.py): results.jsonl, run.json, best-attempt ranking, JSON safety."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest
from lb_helpers import episode, result

from ascend_kernel_gym.leaderboard.records import (
    MANIFEST_FILE,
    RESULTS_FILE,
    ResultsWriter,
    best_turn_index,
    json_safe,
    load_run,
    measured_speedup,
    rank_key,
    read_manifest,
    read_results,
    suite_content_hash,
    write_manifest,
)


def test_best_turn_ranking():
    turns = [
        {"eval": result(correct=True, hack=True, speedup=9.0)},  # hack: worst of the code-bearing
        {"eval": result(correct=True, speedup=1.1)},
        {"eval": result(correct=True, speedup=1.3)},
        {"eval": result(correct=True, speedup=1.3)},  # tie: the earlier one wins
        {"eval": result(compiled=True)},
    ]
    assert best_turn_index(turns) == 2
    assert best_turn_index([]) is None
    assert rank_key(result(compiled=True)) > rank_key(result(correct=True, hack=True))
    assert rank_key(result(compiled=True)) > rank_key(result(compiled=False))


def test_read_results_skips_truncated_lines_and_errored_episodes(tmp_path):
    good = episode("a", 0, result(correct=True, speedup=1.0))
    errored = {**episode("b", 0), "error": "harness failed"}
    lines = [json.dumps(good), json.dumps(errored), '{"task_id": "c", "sam']
    (tmp_path / "results.jsonl").write_text("\n".join(lines))
    done = read_results(tmp_path)
    assert set(done) == {("a", 0)}
    assert set(read_results(tmp_path, include_errors=True)) == {("a", 0), ("b", 0)}


def test_a_rerun_replaces_an_errored_episode_and_an_error_never_replaces_a_finished_one(tmp_path):
    writer = ResultsWriter(tmp_path)
    writer.append({**episode("a", 0), "error": "pool died"})
    writer.append(episode("a", 0, result(correct=True)))  # the re-run on resume
    writer.append(episode("b", 0, result(correct=True)))
    writer.append({**episode("b", 0), "error": "a later run failed"})
    done = read_results(tmp_path, include_errors=True)
    assert not done[("a", 0)].get("error") and done[("a", 0)]["turns"][0]["eval"]["correct"]
    assert not done[("b", 0)].get("error")


def test_writer_ends_a_half_written_line_before_appending(tmp_path):
    finished = json.dumps(episode("a", 0, result(correct=True)))
    (tmp_path / RESULTS_FILE).write_text(finished + "\n" + '{"task_id": "b", "sa')
    ResultsWriter(tmp_path).append(episode("c", 1, result(correct=True)))
    lines = (tmp_path / RESULTS_FILE).read_text().splitlines()
    assert len(lines) == 3 and json.loads(lines[2])["task_id"] == "c"
    assert set(read_results(tmp_path)) == {("a", 0), ("c", 1)}  # the killed run's line is skipped, not merged


def test_records_are_strict_json(tmp_path):
    record = {**episode("a", 0, result(correct=True)), "extra": {"nan": math.nan, "inf": -math.inf, "shape": (2, 3)}}
    ResultsWriter(tmp_path).append(record)
    text = (tmp_path / RESULTS_FILE).read_text()
    assert "NaN" not in text and "Infinity" not in text
    assert read_results(tmp_path)[("a", 0)]["extra"] == {"nan": None, "inf": None, "shape": [2, 3]}
    assert json_safe({1: [1.5, (math.inf,)], "s": "x"}) == {"1": [1.5, [None]], "s": "x"}


@pytest.mark.parametrize(
    ("res", "expected"),
    [
        (result(correct=True, speedup=2.0), 2.0),
        (result(correct=True, speedup=None), None),  # not measured (interpreter)
        (result(correct=True, hack=True, speedup=5.0), None),  # a hack's speed does not count
        (result(correct=False, speedup=3.0), None),
        (result(correct=True, speedup=0.0), None),
        (result(correct=True, speedup=-1.0), None),
        (result(correct=True, speedup=math.nan), None),
        (result(correct=True, speedup=math.inf), None),
        ({**result(correct=True), "speedup": True}, None),  # a bool is not a number here
        (None, None),
    ],
)
def test_measured_speedup_only_for_ok_results_with_a_positive_finite_number(res, expected):
    assert measured_speedup(res) == expected


def test_manifest_round_trip_and_a_missing_manifest_is_a_clear_error(tmp_path):
    write_manifest(tmp_path / "run", {"agent": {"name": "x"}, "score": math.nan, "when": (1, 2)})
    assert read_manifest(tmp_path / "run") == {"agent": {"name": "x"}, "score": None, "when": [1, 2]}
    assert not list((tmp_path / "run").glob("*.tmp"))  # written through a temporary file, then renamed
    with pytest.raises(FileNotFoundError, match="no run manifest"):
        read_manifest(tmp_path / "elsewhere")


def test_load_run_keeps_only_the_runs_tasks_and_sample_range_in_key_order(tmp_path):
    write_manifest(tmp_path, {"tasks": [{"id": "a"}, {"id": "b"}], "config": {"samples": 2}})
    writer = ResultsWriter(tmp_path)
    for task_id, sample in [("b", 1), ("a", 0), ("a", 2), ("z", 0), ("b", 0), ("a", 1)]:
        writer.append(episode(task_id, sample, result(correct=True)))
    manifest, records = load_run(tmp_path)
    assert manifest["config"]["samples"] == 2
    assert [(r["task_id"], r["sample"]) for r in records] == [("a", 0), ("a", 1), ("b", 0), ("b", 1)]
    assert (tmp_path / MANIFEST_FILE).is_file()


def test_suite_content_hash_ignores_order_and_follows_every_task_file():
    a, b = SimpleNamespace(id="a", source_hash="1"), SimpleNamespace(id="b", source_hash="2")
    assert suite_content_hash([a, b]) == suite_content_hash([b, a])
    assert suite_content_hash([a, b]) != suite_content_hash([a, SimpleNamespace(id="b", source_hash="3")])
    assert suite_content_hash([a, b]) != suite_content_hash([a])
