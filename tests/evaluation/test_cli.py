"""`akg check`: JSON and table output; exit status 0 correct, 1 any other verdict, 2 misuse."""

from __future__ import annotations

import json
from pathlib import Path

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
    bad.write_text("import os\nHOME = os.getcwd()\n" + (task.solution_source() or ""))
    assert main(["check", str(bad), "--task", str(task.path), "--backend", "interpreter"]) == 1
    out = capsys.readouterr().out
    assert "forbidden" in out and "module `os` is forbidden" in out
    assert "hack: forbidden" in out and "Feedback the agent would see" in out
    assert main(["check", str(bad), "--task", str(task.path), "--backend", "interpreter", "--exit-zero"]) == 0

    assert main(["check", str(good), "--task", "core/L1/relu", "--backend", "interpreter", "--seed", "1"]) == 0
    table = capsys.readouterr().out
    assert "5/5 passed" in table and "s in all" in table
    assert "compile.first_call" not in table  # the stage timers are one line, not 18 rows
    assert "the task's PyTorch reference run eagerly" in table and '{"label"' not in table


def test_check_misuse_exits_2(tmp_path, capsys) -> None:
    assert main(["check", str(tmp_path / "missing.py"), "--task", "core/L1/relu"]) == 2
    assert "missing.py: no such file" in capsys.readouterr().err
    assert main(["check", str(tmp_path), "--task", "core/L1/relu"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is a directory" in err
    file = tmp_path / "k.py"
    file.write_text("x = 1\n")
    assert main(["check", str(file), "--task", "core/L9/nothing"]) == 2
    assert json.dumps(ErrorType.NONE.value)  # keeps the import used


def test_candidate_file_is_read_as_python_reads_it(tmp_path) -> None:
    from ascend_kernel_gym.evaluation.cli import read_candidate

    code = "import torch\n\nNOTE = 'café'\n"
    bom = tmp_path / "bom.py"
    bom.write_bytes(b"\xef\xbb\xbf" + code.replace("\n", "\r\n").encode())
    assert read_candidate(bom) == code  # no U+FEFF, no \r: what Python compiles
    latin1 = tmp_path / "latin1.py"
    latin1.write_bytes(("# -*- coding: latin-1 -*-\n" + code).encode("latin-1"))
    # decoded as declared; the evaluator stores the text as UTF-8, so the coding line says so
    assert read_candidate(latin1) == "# -*- coding: utf-8 -*-\n" + code
    utf8 = tmp_path / "utf8.py"
    utf8.write_bytes(("#!/usr/bin/env python\n# coding=utf-8\n" + code).encode())
    assert read_candidate(utf8) == "#!/usr/bin/env python\n# coding=utf-8\n" + code
    broken = tmp_path / "broken.py"
    broken.write_bytes(b"x = 1  # \xff\n")  # Python would refuse it; the evaluator reports on it
    assert read_candidate(broken) == "x = 1  # \ufffd\n"


@pytest.mark.slow
def test_check_a_candidate_file_with_a_byte_order_mark(tmp_path, capsys) -> None:
    task = get_task("core/L1/relu")
    good = tmp_path / "good_bom.py"
    good.write_bytes(b"\xef\xbb\xbf" + (task.solution_source() or "").encode())
    argv = ["check", str(good), "--task", "core/L1/relu", "--backend", "interpreter", "--json", "--seed", "2"]
    assert main(argv) == 0
    result = EvalResult.from_json(capsys.readouterr().out)
    assert result.ok, result.error_message
    assert result.error_type == ErrorType.NONE


def test_check_prints_unknown_task_messages_without_quotes(tmp_path, capsys) -> None:
    file = tmp_path / "k.py"
    file.write_text("x = 1\n")
    assert main(["check", str(file), "--task", "core/L9/nothing"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("akg check: error: unknown task ids ['core/L9/nothing']"), err
    assert main(["check", str(file), "--task", "core/L1/relu", "--profile", "huge"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("akg check: error: task 'core/L1/relu' has no profile 'huge'"), err


HINGE_KERNEL = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def hinge_rows(p_ptr, t_ptr, rows_ptr, C, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, C, BLOCK):
        c = start + tl.arange(0, BLOCK)
        m = c < C
        p = tl.load(p_ptr + r * C + c, mask=m, other=0.0)
        t = tl.load(t_ptr + c, mask=m, other=0.0)  # targets broadcast along the last dim
        acc += tl.where(m, tl.maximum(1.0 - p * t, 0.0), 0.0)
    tl.store(rows_ptr + r, tl.sum(acc, axis=0))


@triton.jit
def mean_of(rows_ptr, out_ptr, R, total, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, R, BLOCK):
        i = start + tl.arange(0, BLOCK)
        acc += tl.load(rows_ptr + i, mask=i < R, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0) / total)


class ModelNew(nn.Module):
    def forward(self, predictions, targets):
        p, t = predictions.contiguous(), targets.contiguous()
        R, C = p.shape
        rows = torch.empty((R,), dtype=torch.float32, device=p.device)
        hinge_rows[(R,)](p, t, rows, C, BLOCK=128)
        out = torch.empty((), dtype=p.dtype, device=p.device)
        mean_of[(1,)](rows, out, R, R * C, BLOCK=128)
        return out
"""


@pytest.mark.slow
def test_check_real_kernelbench_hinge_loss_runs_at_the_derived_small_sizes(tmp_path, capsys) -> None:
    """Real L1 100_HingeLoss (32768 x 32768 at full size): the derived small profile shrinks the
    tuple ``input_shape`` with ``batch_size``, so the reference runs and nothing falls back."""
    task = Path(__file__).parent.parent / "data" / "kernelbench" / "level1" / "100_HingeLoss.py"
    kernel = tmp_path / "hinge.py"
    kernel.write_text(HINGE_KERNEL)
    argv = ["check", str(kernel), "--task", str(task), "--backend", "interpreter", "--json", "--seed", "2"]
    assert main([*argv, "--no-perf", "--timeout", "120"]) == 0
    result = EvalResult.from_json(capsys.readouterr().out)
    assert result.ok, result.error_message
    assert result.profile == "small"
    assert not any("small sizes" in w for w in result.warnings), result.warnings


@pytest.mark.parametrize(
    ("content", "verdict"),
    [(b"", "failed: no_code"), (b"\x7fELF\x02\x01\x01\x00\x00\x00binary", "failed: syntax")],
)
def test_empty_and_binary_files_get_a_verdict_and_exit_1(tmp_path, capsys, content, verdict) -> None:
    path = tmp_path / "kernel.py"
    path.write_bytes(content)
    assert main(["check", str(path), "--task", "core/L1/relu", "--backend", "interpreter"]) == 1
    out = capsys.readouterr().out
    assert verdict in out and "Feedback the agent would see" in out


def test_unreadable_file_is_a_one_line_error(tmp_path, capsys, monkeypatch) -> None:
    from ascend_kernel_gym.evaluation import cli

    path = tmp_path / "kernel.py"
    path.write_text("x = 1\n")

    def refuse(self, *args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(cli.Path, "open", refuse)
    assert main(["check", str(path), "--task", "core/L1/relu"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"akg check: error: cannot read {path}: Permission denied"


def test_time_and_estimate_read_as_sentences() -> None:
    from ascend_kernel_gym.evaluation.cli import estimate_sentence, time_summary

    timers = {"ahead.setup": 0.02, "compile.first_call": 0.17, "compile": 0.32, "correctness": 0.61, "total": 3.1}
    assert time_summary(timers) == "3.1 s in all: compile 0.32 s, correctness 0.61 s"
    estimate = {"chip": "910B3", "est_ms": 0.0136, "reference_est_ms": 0.0272, "est_speedup": 2.0, "roofline_ms": 7e-05}
    sentence = estimate_sentence(estimate)
    assert sentence.startswith("about 0.0136 ms per call on an Ascend 910B3, 2.00x the speed of the task's PyTorch")
    assert "(estimated 0.0272 ms)" in sentence and "not a measurement" in sentence


def test_check_sends_the_kernel_to_the_evaluator_named_by_address(tmp_path, capsys, monkeypatch) -> None:
    import ascend_kernel_gym.evaluation.remote as remote

    seen: list[tuple] = []

    class Remote:
        backend = "cuda"

        def evaluate(self, request):
            seen.append(("evaluate", request.task.id, request.seed))
            return EvalResult(task_id=request.task.id, backend="cuda", profile="full", code_hash="h", correct=True)

        def close(self) -> None:  # a shared evaluator is not the command's to close
            seen.append(("close",))

    def evaluator_at(address, backend="auto", **options):
        seen.append(("at", address, backend, options["ascend_checks"], options["cache"]))
        return Remote()

    monkeypatch.setattr(remote, "evaluator_at", evaluator_at)
    file = tmp_path / "k.py"
    file.write_text("class ModelNew: pass\n")
    argv = ["check", str(file), "--task", "core/L1/relu", "--json", "--seed", "3", "--ascend-checks", "off"]
    assert main([*argv, "--evaluator", "ray://auto"]) == 0
    assert EvalResult.from_json(capsys.readouterr().out).backend == "cuda"
    assert seen == [("at", "ray://auto", "auto", "off", False), ("evaluate", "core/L1/relu", 3)]
    seen.clear()
    monkeypatch.setenv("AKG_EVALUATOR", "10.0.0.2:7000")  # the same through the environment
    assert main(argv) == 0
    assert seen[0][:2] == ("at", "10.0.0.2:7000")
