"""`akg check`: JSON and table output, exit status 0 whatever the verdict."""

from __future__ import annotations

import json

import pytest

from ascend_kernel_gym.cli import main
from ascend_kernel_gym.evaluation import ErrorType, EvalResult
from ascend_kernel_gym.tasks import get_task


@pytest.mark.slow
def test_check_json_and_table(tmp_path, capsys) -> None:
    task = get_task("core/L1/relu")
    good = tmp_path / "good.py"
    good.write_text(task.solution_source() or "")
    assert (
        main(["check", str(good), "--task", "core/L1/relu", "--backend", "interpreter", "--json", "--seed", "1"]) == 0
    )
    result = EvalResult.from_json(capsys.readouterr().out)
    assert result.ok and result.task_id == "core/L1/relu" and result.backend == "interpreter"

    bad = tmp_path / "bad.py"
    bad.write_text("import os\n" + (task.solution_source() or ""))
    assert main(["check", str(bad), "--task", str(task.path), "--backend", "interpreter"]) == 0
    out = capsys.readouterr().out
    assert "forbidden" in out and "module `os` is forbidden" in out


def test_check_misuse_exits_2(tmp_path, capsys) -> None:
    assert main(["check", str(tmp_path / "missing.py"), "--task", "core/L1/relu"]) == 2
    file = tmp_path / "k.py"
    file.write_text("x = 1\n")
    assert main(["check", str(file), "--task", "core/L9/nothing"]) == 2
    assert json.dumps(ErrorType.NONE.value)  # keeps the import used
