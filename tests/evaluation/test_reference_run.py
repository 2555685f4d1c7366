"""The reference child's plan (evaluation/reference_run.py): the sensitivity slack of varied trials
and the strays it allows where the reference is ill-conditioned."""

from __future__ import annotations

from pathlib import Path

import torch

from ascend_kernel_gym.evaluation import reference_run
from ascend_kernel_gym.evaluation.job import Job
from ascend_kernel_gym.evaluation.tensor_wire import decode_tree
from ascend_kernel_gym.tasks.task import Task, load_task_file

# sin(SCALE * running sums of x) over float16 inputs: each output depends on many inputs (as an
# attention output does). With SCALE 1000 one rounding step of x moves every output at random by
# up to 2 (the attention block's failure with large inputs, in small); with SCALE 1e-4 it moves
# them by far less than the tolerance.
SHARP = """
import torch
import torch.nn as nn

TASK = {"atol": 1e-3, "rtol": 1e-3}


class Model(nn.Module):
    def forward(self, x):
        return torch.sin(x.float().cumsum(-1) * SCALE)


def get_inputs():
    return [torch.randn(256, 512, dtype=torch.float16)]


def get_init_inputs():
    return []
"""


def _task(tmp_path: Path, scale: float) -> Task:
    path = tmp_path / "sine.py"
    path.write_text(SHARP.replace("SCALE", repr(scale)))
    return load_task_file(path)


def _plan(task: Task) -> tuple[list[dict], list[torch.Tensor]]:
    job = Job(task=task, code="", code_hash="h", backend="interpreter", profile="small", num_trials=4, seed=11)
    tensors: list[torch.Tensor] = []
    header = reference_run.build_plan(job, torch.device("cpu"), tensors)
    return header["trials"], tensors


def test_an_ill_conditioned_trial_gets_strays(tmp_path) -> None:
    trials, tensors = _plan(_task(tmp_path, 1000.0))
    kinds = [t["distribution"] for t in trials]
    assert kinds[:3] == ["task", "large", "small"]
    assert "strays" not in trials[0]  # no moved runs on the task's own inputs
    (allowed, reach), *_ = trials[1]["strays"]
    slack = decode_tree(trials[1]["slack"], tensors)[0].float()
    elements = slack.numel()
    # one in STRAY_DIVISOR of the elements the last moved run took beyond the others' envelope
    assert 1 <= allowed <= elements // reference_run.STRAY_DIVISOR // 4
    assert reach == float(slack.max()) <= 4.0  # as far as the widest move (twice a sine's range), no further
    output = decode_tree(trials[1]["output"], tensors)[0]
    assert 0.9 < float(output.abs().max()) <= 1.0  # counting them left the kept output as it was


def test_a_well_conditioned_reference_allows_no_strays(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(reference_run, "STRAY_DIVISOR", 1)  # even one escaped element would show
    trials, _ = _plan(_task(tmp_path, 1e-4))
    assert [t["distribution"] for t in trials][:3] == ["task", "large", "small"]
    assert all("strays" not in t for t in trials)


def test_the_strays_follow_the_outputs_tensors_in_order(tmp_path) -> None:
    """One entry per compared tensor (as the slack has): an integer output gets none, a None in
    the output is no entry, the ill-conditioned tensor after them gets its own."""
    path = tmp_path / "mixed.py"
    path.write_text(
        SHARP.replace(
            "return torch.sin(x.float().cumsum(-1) * SCALE)",
            "return x.argmax(-1), None, torch.sin(x.float().cumsum(-1) * 1000.0)",
        )
    )
    trials, _ = _plan(load_task_file(path))
    assert trials[1]["distribution"] == "large"
    first, second = trials[1]["strays"]
    assert first is None and second[0] >= 1


def _lazy_plan(task: Task) -> tuple[list[dict], list[torch.Tensor], dict]:
    job = Job(task=task, code="", code_hash="h", backend="interpreter", profile="small", num_trials=4, seed=11)
    tensors: list[torch.Tensor] = []
    deferred: dict = {}
    header = reference_run.build_plan(job, torch.device("cpu"), tensors, deferred)
    return header["trials"], tensors, deferred


def test_moved_runs_left_to_the_judge_give_the_slack_and_strays_the_plan_would_have_had(tmp_path) -> None:
    task = _task(tmp_path, 1000.0)
    eager, eager_tensors = _plan(task)
    lazy, lazy_tensors, deferred = _lazy_plan(task)
    # the same trials, seeds and outputs; only the varied ones' moved runs wait (trial 1: the task's inputs)
    assert [(t["seed"], t["distribution"]) for t in lazy] == [(t["seed"], t["distribution"]) for t in eager]
    varied = [i for i, t in enumerate(eager) if t["distribution"] != "task" and t["case"] == "main"]
    assert varied and sorted(deferred) == varied
    for index in varied:
        assert "strays" not in lazy[index]
        out = decode_tree(lazy[index]["output"], lazy_tensors)
        assert torch.equal(out, decode_tree(eager[index]["output"], eager_tensors))
        without = decode_tree(lazy[index]["slack"], lazy_tensors) if lazy[index]["slack"] is not None else [None]
        slack, strays = deferred[index](out)
        planned = decode_tree(eager[index]["slack"], eager_tensors)
        assert torch.equal(slack[0], planned[0])  # exactly the plan's slack, moved runs and all
        assert without[0] is None or bool((slack[0].float() >= without[0].float()).all())  # it only widens
        assert strays == eager[index].get("strays", [None])
    assert any(eager[i].get("strays") for i in varied)  # the ill-conditioned trial's strays came back too


def test_a_moved_run_the_reference_cannot_take_gives_no_slack(tmp_path, monkeypatch) -> None:
    _, _, deferred = _lazy_plan(_task(tmp_path, 1000.0))
    index = min(deferred)
    monkeypatch.setattr(reference_run, "run_once", lambda *args: (torch.full((2,), float("nan")),))
    assert deferred[index]((torch.zeros(2),)) is None


def test_the_judge_makes_the_moved_runs_only_for_an_output_that_needs_their_slack(tmp_path) -> None:
    from ascend_kernel_gym.evaluation.judge import Judge

    task = _task(tmp_path, 1000.0)
    header_trials, tensors, deferred = _lazy_plan(task)
    header = {"trials": header_trials, "probe": None, "profile": "small", "notes": []}
    calls: list[int] = []

    def counted(index: int):
        def widen(out):
            calls.append(index)
            return deferred[index](out)

        return widen

    judge = Judge(task.atol, task.rtol, len(header_trials))
    judge.load_live_reference({**header, "probe": header_trials[0]}, tensors, {i: counted(i) for i in deferred})
    outputs = [decode_tree(entry["output"], tensors) for entry in header_trials]
    ill = min(deferred)  # the large-magnitude trial: one rounding step moves the sines by up to 2
    slack, _ = deferred[ill](outputs[ill])
    for index, out in enumerate(outputs):
        cand = out.clone()
        if index == ill:  # an honest kernel that rounds otherwise: beyond the plain bound, within the moves
            cand = out + 0.5 * slack[0].float()
            assert not torch.allclose(cand, out, atol=task.atol, rtol=task.rtol)
        verdict = judge.judge_live(index, cand, cand if index == 0 else None, [False], [], {})
        assert verdict.action == "continue", verdict.failure
    assert calls == [ill] and judge.widened == 1  # the exact outputs of the other varied trials needed none
    assert judge.done


def test_an_output_beyond_the_moves_still_fails_once_they_are_made(tmp_path) -> None:
    from ascend_kernel_gym.evaluation.judge import Judge
    from ascend_kernel_gym.evaluation.result import ErrorType

    task = _task(tmp_path, 1000.0)
    header_trials, tensors, deferred = _lazy_plan(task)
    judge = Judge(task.atol, task.rtol, len(header_trials))
    judge.load_live_reference({"trials": header_trials, "probe": header_trials[0]}, tensors, deferred)
    ill = min(deferred)
    for index, entry in enumerate(header_trials[: ill + 1]):
        out = decode_tree(entry["output"], tensors)
        cand = out + 10.0 if index == ill else out.clone()  # past the widest move (twice a sine's range)
        verdict = judge.judge_live(index, cand, cand if index == 0 else None, [False], [], {})
    assert verdict.action == "fail" and verdict.failure.error_type == ErrorType.VALUE_MISMATCH
    assert judge.widened == 1 and judge.passed == ill
