"""End to end on the real evaluator (Triton interpreter): eval -> resume -> report -> submit -> verify/tamper.

Two small L1 tasks with the reference agent; about eight evaluations in all.
"""

from __future__ import annotations

import copy
import json
import shutil

import pytest

from ascend_kernel_gym.cli import main
from ascend_kernel_gym.leaderboard.records import read_manifest, read_results, sha256_text
from ascend_kernel_gym.leaderboard.runner import EvalConfig, default_env_factory, run_eval
from ascend_kernel_gym.leaderboard.submission import build_submission, metrics_from_entries, seal, write_submission

pytestmark = pytest.mark.slow

TASKS = ["core/L1/relu", "core/L1/sigmoid"]

WRONG_RELU = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def doubled_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    tl.store(out_ptr + offsets, x * 2.0, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        doubled_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        return out
"""


class CountingEvaluator:
    """Forwards to the shared interpreter evaluator and counts the evaluations."""

    backend = "interpreter"

    def __init__(self) -> None:
        from ascend_kernel_gym.evaluation import get_shared_evaluator

        self.inner = get_shared_evaluator("interpreter")
        self.calls = 0

    def evaluate(self, request):
        self.calls += 1
        return self.inner.evaluate(request)


def counting_factory(counter):
    from dataclasses import replace

    def factory(config, backend):
        return default_env_factory(replace(config, env_kwargs={"evaluator": counter}), backend)

    return factory


def eval_config(out):
    return EvalConfig(
        agent="reference",
        out=str(out),
        split="all",
        task_ids=TASKS,
        backend="interpreter",
        turns=1,
        samples=1,
        workers=2,
    )


@pytest.fixture(scope="module")
def reference_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("e2e") / "run"
    counter = CountingEvaluator()
    summary = run_eval(eval_config(out), env_factory=counting_factory(counter), progress=False)
    return out, summary, counter.calls


def test_reference_agent_solves_the_tasks(reference_run):
    out, summary, calls = reference_run
    assert summary.episodes_run == 2 and summary.correct == 2 and summary.episodes_failed == 0
    assert calls == 2
    records = read_results(out)
    for task_id in TASKS:
        record = records[(task_id, 0)]
        assert record["agent"] == "reference"
        assert record["best_result"]["correct"] is True and record["best_result"]["hack"] is False
        assert record["best_result"]["backend"] == "interpreter" and record["best_result"]["speedup"] is None
        assert "ModelNew" in record["best_code"] and record["turns"][0]["action"].startswith("```python")
    manifest = read_manifest(out)
    assert manifest["status"] == "complete" and manifest["backend"] == "interpreter"


def test_rerun_does_no_new_evaluations(reference_run):
    out, _, _ = reference_run
    before = (out / "results.jsonl").read_bytes()
    counter = CountingEvaluator()
    summary = run_eval(eval_config(out), env_factory=counting_factory(counter), progress=False)
    assert counter.calls == 0
    assert summary.episodes_run == 0 and summary.env_steps == 0 and summary.generate_calls == 0
    assert summary.episodes_skipped == 2
    assert (out / "results.jsonl").read_bytes() == before


def test_interrupted_run_resumes_only_the_missing_episode(reference_run, tmp_path):
    out, _, _ = reference_run
    copy_dir = tmp_path / "partial"
    shutil.copytree(out, copy_dir)
    lines = (copy_dir / "results.jsonl").read_text().splitlines()
    # keep the first episode and a half-written second line, as after a kill during the write
    (copy_dir / "results.jsonl").write_text(lines[0] + "\n" + lines[1][: len(lines[1]) // 2])
    counter = CountingEvaluator()
    summary = run_eval(eval_config(copy_dir), env_factory=counting_factory(counter), progress=False)
    assert summary.episodes_run == 1 and counter.calls == 1
    assert len(read_results(copy_dir)) == 2


def test_cli_eval_resume_and_report(reference_run, tmp_path, capsys):
    out, _, _ = reference_run
    args = [
        "eval",
        "--agent",
        "reference",
        "--split",
        "all",
        "--backend",
        "interpreter",
        "--turns",
        "1",
        "--samples",
        "1",
        "--workers",
        "2",
        "--out",
        str(out),
        "--tasks",
        *TASKS,
        "--no-progress",
    ]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "0 episode(s) run, 2 already done" in err
    assert "the whole run: 2 of 2 episode(s) correct" in err  # a resumed run still counts its episodes

    assert main(["report", str(out), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    overall = report["metrics"]["overall"]
    assert overall["correct_rate"] == 1.0 and overall["fast_0"] == 1.0 and overall["fast_1"] is None
    assert report["metrics"]["by_level"]["1"]["tasks"] == 2

    assert main(["report", str(out), "--format", "md"]) == 0
    markdown = capsys.readouterr().out
    assert "| all | 2 | 100.0% | 100.0% |" in markdown and "speedup not measured" in markdown

    assert main(["report", str(out), "--plots", str(tmp_path / "plots")]) == 0
    captured = capsys.readouterr()
    assert "akg report" in captured.out
    assert (tmp_path / "plots" / "per_category.png").stat().st_size > 1000
    assert "speedup not measured" in captured.err
    assert not (tmp_path / "plots" / "speedup_distribution.png").exists()


@pytest.fixture(scope="module")
def honest_submission(reference_run, tmp_path_factory):
    out, _, _ = reference_run
    data = build_submission(out)
    path = write_submission(data, tmp_path_factory.mktemp("sub") / "honest.json")
    return data, path


def forge(data, mutate):
    """A determined editor: change things, then fix every hash, the summary and the digest."""
    forged = copy.deepcopy(data)
    mutate(forged)
    for task in forged["tasks"]:
        if task["code"] is not None:
            task["code_sha256"] = sha256_text(task["code"])
    forged["metrics"] = metrics_from_entries(forged["tasks"], forged["backend"])
    return seal(forged)


def verify(path, capsys, *extra):
    code = main(["verify", str(path), "--backend", "interpreter", *extra])
    return code, capsys.readouterr().out


def test_honest_submission_verifies(honest_submission, tmp_path, capsys):
    data, path = honest_submission
    assert data["suite"]["split"] == "custom" and data["suite"]["task_count"] == 2  # an explicit --tasks list
    report_path = tmp_path / "honest.verify.json"
    code, out = verify(path, capsys, "--report", str(report_path))
    assert code == 0, out
    assert "ACCEPTED" in out
    report = json.loads(report_path.read_text())
    assert report["accepted"] and [t["verdict"] for t in report["tasks"]] == ["agree", "agree"]


def test_failing_kernel_claimed_correct_is_rejected(honest_submission, tmp_path, capsys):
    data, _ = honest_submission
    forged = forge(data, lambda d: d["tasks"][0].update(code=WRONG_RELU))  # claims stay "correct"
    path = write_submission(forged, tmp_path / "forged.json")
    code, out = verify(path, capsys)
    assert code == 1
    assert "REJECTED" in out and "core/L1/relu: claimed correct, but fails here" in out


def test_code_edited_after_the_run_is_rejected(honest_submission, tmp_path, capsys):
    data, _ = honest_submission
    edited = copy.deepcopy(data)
    edited["tasks"][1]["code"] += "\n# tuned by hand later\n"
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(seal(edited)))
    code, out = verify(path, capsys)
    assert code == 1 and "code sha256 mismatch" in out and "core/L1/sigmoid" in out


def test_claims_edited_without_the_digest_are_rejected(honest_submission, tmp_path, capsys):
    data, _ = honest_submission
    edited = copy.deepcopy(data)
    edited["agent"]["name"] = "a better agent"
    path = tmp_path / "renamed.json"
    path.write_text(json.dumps(edited))
    code, out = verify(path, capsys)
    assert code == 1 and "content digest mismatch" in out


def test_speedup_claimed_on_the_interpreter_is_rejected(honest_submission, tmp_path, capsys):
    data, _ = honest_submission
    forged = forge(data, lambda d: d["tasks"][0]["claimed"].update(speedup=3.0))
    path = write_submission(forged, tmp_path / "fast.json")
    code, out = verify(path, capsys)
    assert code == 1 and "claims a speedup of 3.0 on the interpreter" in out


def test_not_json_is_rejected(tmp_path, capsys):
    path = tmp_path / "junk.json"
    path.write_text("garbage{")
    code, out = verify(path, capsys)
    assert code == 1 and "not a JSON file" in out
