"""``akg tasks list|show`` and ``akg doctor`` (tasks/cli.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ascend_kernel_gym.cli import main as akg
from ascend_kernel_gym.tasks import get_task, load_suite
from ascend_kernel_gym.tasks.task import UnknownTaskError

GEMM = Path(__file__).parent.parent / "data" / "kernelbench" / "level2" / "12_Gemm_Multiply_LeakyReLU.py"


def test_cli_tasks_list_json(capsys):
    assert akg(["tasks", "list", "--json", "--level", "1"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows and all(r["level"] == 1 for r in rows)
    assert "core/L1/relu" in {r["id"] for r in rows}


def test_cli_tasks_show_path_and_id(capsys):
    assert akg(["tasks", "show", str(GEMM), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["level"] == 2 and "class Model" in data["reference_source"]
    assert akg(["tasks", "show", "core/L1/relu", "--profile", "small", "--solution"]) == 0
    out = capsys.readouterr().out
    assert "batch_size = 16" in out and "relu_kernel" in out


def test_cli_unknown_task_is_an_error_exit(capsys):
    assert akg(["tasks", "show", "core/L1/does_not_exist"]) == 2
    assert "does_not_exist" in capsys.readouterr().err


def test_cli_doctor_reports_backends(capsys):
    assert akg(["doctor", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report["backends"]) == {"npu", "cuda", "interpreter"}
    assert report["backends"]["interpreter"]["available"] is True
    assert report["versions"]["torch"]


def test_unknown_ids_and_profiles_print_plain_messages(capsys) -> None:
    assert akg(["tasks", "show", "core/L1/does_not_exist"]) == 2
    err = capsys.readouterr().err
    assert "error: unknown task ids ['core/L1/does_not_exist']" in err and 'error: "' not in err
    assert akg(["tasks", "show", "core/L1/relu", "--profile", "huge"]) == 2
    err = capsys.readouterr().err
    assert "error: task 'core/L1/relu' has no profile 'huge'" in err and 'error: "' not in err
    with pytest.raises(KeyError):  # still a KeyError for callers
        get_task("core/L1/does_not_exist")
    assert str(UnknownTaskError("plain text")) == "plain text"


def test_cli_tasks_list_filters_by_split_and_prints_a_table(capsys):
    assert akg(["tasks", "list", "--json", "--split", "test"]) == 0
    test_ids = {r["id"] for r in json.loads(capsys.readouterr().out)}
    assert test_ids == {t.id for t in load_suite("core", split="test")}
    assert akg(["tasks", "list", "--level", "2"]) == 0
    table = capsys.readouterr().out
    assert f"suite 'core', split 'all': {len(load_suite('core', levels=[2]))} tasks" in table
    assert "core/L2/" in table and "core/L1/" not in table and "core/L3/" not in table  # only level-2 rows
