"""Shape cases (tasks/cases.py): main first, declared or derived others, odd sizes, ratios kept,
capped to a budget, deterministic, and runnable through instantiate(task, profile, case)."""

from __future__ import annotations

import pickle

import pytest

from ascend_kernel_gym.tasks import TaskLoadError, get_task, load_task_source
from ascend_kernel_gym.tasks.cases import ShapeCase

ATTENTION = '''import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear projection split into heads; the width must stay divisible by the head count."""

    def __init__(self, width, num_heads, scale):
        super().__init__()
        self.proj = nn.Linear(width, hidden)
        self.num_heads = num_heads
        self.scale = scale

    def forward(self, x):
        y = self.proj(x) * self.scale
        return y.view(x.shape[0], x.shape[1], self.num_heads, -1).sum(-1)


batch_size = 16
seq_len = 128
width = 256
hidden = 4 * width
num_heads = 8
scale = 0.5


def get_inputs():
    return [torch.randn(batch_size, seq_len, width)]


def get_init_inputs():
    return [width, num_heads, scale]
'''


def test_main_case_first_then_derived_cases_with_odd_sizes_and_ratios_kept() -> None:
    task = load_task_source(ATTENTION, task_id="t/attn")
    cases = task.shape_cases("full")
    assert cases[0] == ShapeCase("main", {}, None, task.profile_note("full"), cases[0].elements)
    by_name = {case.name: case for case in cases}
    assert list(by_name) == ["main", "odd", "batch", "half"]
    odd = by_name["odd"].overrides
    # no block size divides them; the width the model takes stays a multiple of the head count
    assert (odd["batch_size"], odd["seq_len"], odd["width"]) == (15, 127, 248)
    assert odd["hidden"] == 4 * odd["width"]  # computed constants follow
    assert "num_heads" not in odd  # a head count is not a size
    assert odd["scale"] == 0.75  # a float the model takes is varied too
    assert by_name["batch"].overrides == {"batch_size": 19}
    assert by_name["half"].overrides["width"] == 128 and by_name["half"].overrides["hidden"] == 512


def test_cases_are_deterministic_and_picklable() -> None:
    task = load_task_source(ATTENTION, task_id="t/attn")
    first, second = task.shape_cases("small"), load_task_source(ATTENTION, task_id="t/attn").shape_cases("small")
    assert first == second
    assert pickle.loads(pickle.dumps(first)) == first


def test_cases_respect_the_budget_keep_small_ones_and_say_what_was_shrunk() -> None:
    task = load_task_source(ATTENTION, task_id="t/attn")
    budget = 200_000
    cases = task.shape_cases("full", budget_elems=budget)
    assert cases[0].name == "main" and cases[0].elements > budget  # the main case is never dropped
    for case in cases[1:]:
        assert case.elements is not None and case.elements <= budget
    notes = {case.name: case.note for case in cases}
    assert notes["odd"].startswith("shrunk to the budget") and "half" in notes
    for case in cases[1:]:  # shrinking keeps what the file computes from the sizes
        if "width" in case.overrides:
            assert case.overrides["hidden"] == 4 * case.overrides["width"], case


def test_each_case_runs_with_its_sizes_and_the_reference_accepts_the_odd_ones() -> None:
    pytest.importorskip("torch")
    from ascend_kernel_gym.tasks.runtime import instantiate

    task = load_task_source(ATTENTION, task_id="t/attn")
    for case in task.shape_cases("small", budget_elems=task.size_budget):
        tm = instantiate(task, "small", case)
        (x,) = tm.get_inputs()
        values = {**{"batch_size": 16, "seq_len": 128, "width": 256}, **task.profiles["small"], **case.overrides}
        assert tuple(x.shape) == (values["batch_size"], values["seq_len"], values["width"]), case.name
        model = tm.Model(*tm.get_init_inputs())
        assert model(x).shape[-1] == 8
        assert tm.case == case


def test_declared_cases_replace_derived_ones_and_are_validated() -> None:
    source = ATTENTION.replace(
        "batch_size = 16\n",
        'TASK = {"cases": [{"name": "odd_seq", "seq_len": 100}, {"name": "one_row", "batch_size": 1}]}\n\n'
        "batch_size = 16\n",
    )
    task = load_task_source(source, task_id="t/declared")
    assert [c.name for c in task.shape_cases("full")] == ["main", "odd_seq", "one_row"]
    assert task.shape_cases("small")[1].overrides["seq_len"] == 100
    bad = ATTENTION.replace("batch_size = 16\n", 'TASK = {"cases": [{"name": "x", "nope": 3}]}\nbatch_size = 16\n')
    with pytest.raises(TaskLoadError, match="not module-level constants"):
        load_task_source(bad, task_id="t/bad")
    reserved = ATTENTION.replace("batch_size = 16\n", 'TASK = {"cases": [{"name": "main"}]}\nbatch_size = 16\n')
    with pytest.raises(TaskLoadError, match='not "main"'):
        load_task_source(reserved, task_id="t/bad")


def test_a_case_for_a_file_without_groups_cannot_name_a_group() -> None:
    pytest.importorskip("torch")
    from ascend_kernel_gym.tasks.runtime import instantiate

    task = load_task_source(ATTENTION, task_id="t/attn")
    with pytest.raises(TaskLoadError, match="no get_input_groups"):
        instantiate(task, "full", ShapeCase("g", {}, group=1))


def test_every_core_task_has_a_main_case_and_an_extra_case_within_the_budget() -> None:
    from ascend_kernel_gym.tasks import load_suite

    for task in load_suite("core"):
        cases = task.shape_cases("small", budget_elems=task.size_budget)
        assert cases[0].name == "main" and cases[0].overrides == task.profiles["small"], task.id
        assert len(cases) >= 2, f"{task.id}: no extra shape case ({cases[0].note})"


def test_a_relu_task_gets_cases_whose_sizes_no_block_divides() -> None:
    task = get_task("core/L1/relu")
    odd = {case.name: case for case in task.shape_cases("small")}["odd"]
    sizes = [v for v in odd.overrides.values() if isinstance(v, int)]
    assert sizes and all(v % 16 for v in sizes)


def test_constants_computed_from_sizes_follow_each_case_not_the_profile() -> None:
    source = (
        "import torch\nimport torch.nn as nn\n\n\nbatch_size = 4 * 4\ndim = 2 * 256\nhalf_dim = dim // 2\n\n\n"
        "class Model(nn.Module):\n    def forward(self, x):\n        return torch.tanh(x[:, :half_dim])\n\n\n"
        "def get_inputs():\n    return [torch.randn(batch_size, dim)]\n\n\ndef get_init_inputs():\n    return []\n"
    )
    task = load_task_source(source, task_id="t/half")
    assert task.profiles["small"] == {"dim": 64, "half_dim": 32}
    for case in task.shape_cases("small"):
        assert case.overrides["half_dim"] == case.overrides["dim"] // 2, case
    declared = load_task_source(
        source.replace("batch_size = 4 * 4\n", 'TASK = {"cases": [{"name": "odd", "dim": 99}]}\nbatch_size = 4 * 4\n'),
        task_id="t/half2",
    )
    assert declared.shape_cases("small")[1].overrides["half_dim"] == 49


def test_the_batch_case_moves_sizes_equal_to_the_batch_size() -> None:
    """L1 100_HingeLoss: predictions (batch_size, *input_shape) * targets (batch_size,) broadcast only
    while input_shape[-1] == batch_size."""
    from pathlib import Path

    hinge = get_task(str(Path(__file__).parent.parent / "data" / "kernelbench" / "level1" / "100_HingeLoss.py"))
    batch = {case.name: case for case in hinge.shape_cases("small")}["batch"]
    assert batch.overrides == {"batch_size": 67, "input_shape": (67,)}
