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
