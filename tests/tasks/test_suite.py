"""Suites (tasks/suite.py): loading a suite directory, solutions by relative path, the deterministic
train/test split, filters, and ``get_task`` by id or path."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from ascend_kernel_gym.tasks import TaskLoadError, get_task, load_suite
from ascend_kernel_gym.tasks.suite import TEST_EVERY, bundled_suites

DATA = Path(__file__).parent.parent / "data" / "kernelbench"
SOFTMAX = DATA / "level1" / "23_Softmax.py"

TASK_FILE = """import torch
import torch.nn as nn
{meta}

class Model(nn.Module):
    def forward(self, x):
        return x + 1


def get_inputs():
    return [torch.randn(4)]


def get_init_inputs():
    return []
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_core_suite_split_is_deterministic_stratified_and_complete():
    tasks = load_suite("core")
    train, test = load_suite("core", split="train"), load_suite("core", split="test")
    assert {t.id for t in train} | {t.id for t in test} == {t.id for t in tasks}
    assert not {t.id for t in train} & {t.id for t in test}
    assert {t.level for t in test} == {t.level for t in tasks}  # every level is represented in test
    # the split depends only on ids: recomputing from scratch gives the same assignment
    from ascend_kernel_gym.tasks.suite import _assign_splits

    fresh = {t.id: t.split for t in _assign_splits([t.__class__(**{**t.__dict__, "split": None}) for t in tasks])}
    assert fresh == {t.id: t.split for t in tasks}


def test_suite_filters_and_unknown_ids():
    assert all(t.level == 1 for t in load_suite("core", levels=[1]))
    assert [t.id for t in load_suite("core", task_ids=["core/L1/relu"])] == ["core/L1/relu"]
    with pytest.raises(KeyError, match="unknown task ids"):
        load_suite("core", task_ids=["core/L1/nope"])
    with pytest.raises(ValueError, match="split must be one of"):
        load_suite("core", split="validation")
    with pytest.raises(ValueError, match="unknown suite"):
        load_suite("no-such-suite")


def test_directory_of_kernelbench_files_is_a_suite():
    tasks = load_suite(DATA)
    assert {t.name for t in tasks} == {
        "23_Softmax",
        "12_Gemm_Multiply_LeakyReLU",
        "100_HingeLoss",
        "1_Square_matrix_multiplication_",
    }
    assert {t.level for t in tasks} == {1, 2}
    assert all(t.id.startswith("kernelbench/") for t in tasks)


def test_get_task_by_id_and_by_path():
    relu = get_task("core/L1/relu")
    assert relu.suite == "core" and relu.solution_path is not None
    assert "ModelNew" in relu.solution_source()
    assert get_task(str(SOFTMAX)).name == "23_Softmax"
    with pytest.raises(KeyError):
        get_task("nosuite/L1/relu")


def test_each_level_sends_one_task_in_test_every_to_the_test_split():
    tasks = load_suite("core")
    for level in {t.level for t in tasks}:
        of_level = [t for t in tasks if t.level == level]
        assert sum(t.split == "test" for t in of_level) == math.ceil(len(of_level) / TEST_EVERY)
    assert [t.id for t in tasks] == sorted((t.id for t in tasks), key=lambda i: (get_task(i).level, i))


def test_a_suite_directory_pairs_solutions_by_path_and_honours_explicit_splits(tmp_path):
    root = tmp_path / "mysuite"
    write(root / "tasks" / "L1" / "plus.py", TASK_FILE.format(meta=""))
    write(root / "tasks" / "L1" / "fixed.py", TASK_FILE.format(meta='TASK = {"split": "test"}'))
    write(root / "tasks" / "L2" / "_helper.py", "this is not a task file")  # skipped: leading underscore
    write(root / "solutions" / "L1" / "plus.py", "class ModelNew: pass\n")
    tasks = {t.id: t for t in load_suite(root)}
    assert set(tasks) == {"mysuite/L1/plus", "mysuite/L1/fixed"}
    assert tasks["mysuite/L1/plus"].solution_source() == "class ModelNew: pass\n"
    assert tasks["mysuite/L1/fixed"].solution_path is None
    assert tasks["mysuite/L1/fixed"].split == "test"
    test_split = load_suite(root, split="test")
    assert "mysuite/L1/fixed" in {t.id for t in test_split} and all(t.split == "test" for t in test_split)


def test_a_suite_with_duplicate_ids_or_no_task_files_is_refused(tmp_path):
    root = tmp_path / "dups"
    write(root / "tasks" / "L1" / "a.py", TASK_FILE.format(meta=""))
    write(root / "tasks" / "L1" / "more" / "a.py", TASK_FILE.format(meta=""))  # same level and name: same id
    with pytest.raises(TaskLoadError, match="duplicate task id 'dups/L1/a'"):
        load_suite(root)
    (tmp_path / "empty" / "tasks").mkdir(parents=True)
    with pytest.raises(TaskLoadError, match="suite has no task files"):
        load_suite(tmp_path / "empty")


def test_task_ids_keep_the_order_asked_for_and_get_task_names_the_bundled_suites():
    ids = ["core/L1/sigmoid", "core/L1/relu"]
    assert [t.id for t in load_suite("core", task_ids=ids)] == ids
    assert "core" in bundled_suites()
    with pytest.raises(KeyError, match="neither a task file nor a task id"):
        get_task("nosuite/L1/relu")
