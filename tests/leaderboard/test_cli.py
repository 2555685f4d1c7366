"""``akg eval`` and ``akg verify`` argument handling (leaderboard/cli.py), with the runner and the verifier
stubbed out. The real runs through these commands are in test_eval_end_to_end.py, test_report.py,
test_submission.py and test_site.py."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from ascend_kernel_gym.cli import main
from ascend_kernel_gym.leaderboard import runner, verify
from ascend_kernel_gym.leaderboard.records import ResultsWriter, write_manifest
from ascend_kernel_gym.leaderboard.submission import SubmissionError


@pytest.fixture
def eval_configs(monkeypatch):
    """The EvalConfigs ``akg eval`` hands to run_eval (nothing runs)."""
    seen = []

    def fake_run_eval(config, progress=True):
        seen.append((config, progress))
        # the run directory a real run leaves: 2 of 3 finished episodes correct, one of them caught hacking
        write_manifest(config.out, {"tasks": [{"id": "core/L1/relu"}, {"id": "core/L1/sum"}], "config": {"samples": 2}})
        writer = ResultsWriter(config.out)
        for task_id, sample, correct, hack in [
            ("core/L1/relu", 0, True, False),
            ("core/L1/relu", 1, True, False),
            ("core/L1/sum", 0, True, True),
        ]:
            result = {"correct": correct, "hack": hack}
            writer.append({"task_id": task_id, "sample": sample, "best_result": result, "turns": [{"eval": result}]})
        counts = {"episodes_total": 4, "episodes_skipped": 1, "episodes_run": 3, "episodes_failed": 1, "correct": 2}
        return SimpleNamespace(out=config.out, wall_s=0.5, **counts)

    monkeypatch.setattr(runner, "run_eval", fake_run_eval)
    return seen


def test_eval_arguments_become_the_run_configuration(eval_configs, tmp_path, capsys):
    out = str(tmp_path / "run")
    argv = ["eval", "--agent", "openai", "--out", out, "--levels", "1", "2", "--tasks", "core/L1/relu"]
    argv += ["--backend", "interpreter", "--turns", "3", "--samples", "2", "--workers", "5", "--seed", "9"]
    argv += ["--endpoint", "http://127.0.0.1:9/v1", "--model", "m", "--temperature", "0.5", "--no-progress"]
    argv += ["--agent-kwargs", '{"concurrency": 2}', "--env-kwargs", '{"num_trials": 2}']
    assert main(argv) == 0
    ((config, progress),) = eval_configs
    assert progress is False
    assert (config.agent, config.out, config.split, config.suite) == ("openai", out, "test", "core")
    assert config.levels == [1, 2] and config.task_ids == ["core/L1/relu"] and config.backend == "interpreter"
    assert (config.turns, config.samples, config.workers, config.seed) == (3, 2, 5, 9)
    assert config.env_kwargs == {"num_trials": 2}
    # only the options given on the command line reach the agent
    assert config.agent_options == {
        "endpoint": "http://127.0.0.1:9/v1",
        "model": "m",
        "temperature": 0.5,
        "agent_kwargs": {"concurrency": 2},
    }
    err = " ".join(capsys.readouterr().err.split())  # rich wraps long lines
    assert "3 episode(s) run, 1 already done (of 4), 1 harness error(s)" in err
    assert "the whole run: 2 of 3 episode(s) correct, 1 with a hack caught" in err
    assert "re-run" in err and "next: akg report" in err


def test_eval_defaults_pass_no_agent_options(eval_configs, tmp_path):
    assert main(["eval", "--agent", "reference", "--out", str(tmp_path / "run")]) == 0
    ((config, progress),) = eval_configs
    assert progress is True and config.agent_options == {} and config.env_kwargs == {}
    assert config.levels is None and config.task_ids is None and config.backend == "auto"


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--agent-kwargs", "{not json", "--agent-kwargs must be a JSON object"),
        ("--env-kwargs", "[1, 2]", "--env-kwargs must be a JSON object, got list"),
    ],
)
def test_eval_refuses_json_options_that_are_not_objects(eval_configs, tmp_path, capsys, flag, value, message):
    assert main(["eval", "--agent", "reference", "--out", str(tmp_path / "run"), flag, value]) == 2
    assert message in capsys.readouterr().err
    assert eval_configs == []  # nothing ran


def _report(accepted: bool) -> SimpleNamespace:
    return SimpleNamespace(accepted=accepted, to_dict=lambda: {"accepted": accepted, "reasons": []})


def test_verify_exit_status_follows_the_verdict_and_the_report_is_written(monkeypatch, tmp_path, capsys):
    calls = []

    def fake_verify(data, **options):
        calls.append((data, options))
        return _report(data["honest"])

    monkeypatch.setattr(verify, "verify_submission", fake_verify)
    path = tmp_path / "sub.json"
    path.write_text(json.dumps({"honest": True}))
    report_file = tmp_path / "report.json"
    argv = ["verify", str(path), "--backend", "interpreter", "--tolerance", "0.5", "--workers", "3", "--json"]
    assert main([*argv, "--report", str(report_file), "--allow-suite-change"]) == 0
    assert json.loads(capsys.readouterr().out) == {"accepted": True, "reasons": []}
    assert json.loads(report_file.read_text()) == {"accepted": True, "reasons": []}
    options = calls[0][1]
    assert options["backend"] == "interpreter" and options["speedup_tolerance"] == 0.5 and options["workers"] == 3
    assert options["allow_suite_change"] is True and options["progress"] is False  # --json: no progress bar
    path.write_text(json.dumps({"honest": False}))
    assert main(argv) == 1


def test_verify_rejects_unreadable_submissions_with_status_1(monkeypatch, tmp_path, capsys):
    def refuse(data, **options):
        raise SubmissionError("digest mismatch")

    monkeypatch.setattr(verify, "verify_submission", refuse)
    path = tmp_path / "sub.json"
    path.write_text("{}")
    assert main(["verify", str(path)]) == 1
    assert "REJECTED: digest mismatch" in capsys.readouterr().out
    path.write_text("garbage{")
    assert main(["verify", str(path)]) == 1
    out = capsys.readouterr().out
    assert out.startswith("REJECTED") and "is not a JSON file" in out
    assert main(["verify", str(tmp_path / "missing.json")]) == 2  # a usage error, not a verdict
