"""The ``akg`` command's terminal behaviour: closed pipes, ``--verbose``, markup and 80 columns."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ascend_kernel_gym.cli import QUIET_ENVIRONMENT, build_parser, main

ROOT = Path(__file__).resolve().parents[1]


def _akg_into_closed_pipe(args: list[str]) -> subprocess.CompletedProcess[str]:
    """``akg ARGS | true``: the reader is gone before the first write (as ``| head`` is after its lines)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    command = f"{sys.executable} -m ascend_kernel_gym.cli {' '.join(args)} | true"
    script = command + "; echo status=${PIPESTATUS[0]} >&2"
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)


@pytest.mark.parametrize("args", [["tasks", "list", "--json"], ["kb", "list", "--json"]])
def test_json_into_a_closed_pipe_ends_quietly(args) -> None:
    done = _akg_into_closed_pipe(args)
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr
    assert "status=141" in done.stderr or "status=0" in done.stderr, done.stderr


def test_verbose_is_accepted_before_and_after_the_sub_command() -> None:
    parser = build_parser()
    assert parser.parse_args(["--verbose", "tasks", "list"]).verbose is True
    assert parser.parse_args(["tasks", "list", "--verbose"]).verbose is True
    assert parser.parse_args(["kb", "search", "x", "--verbose"]).verbose is True
    assert getattr(parser.parse_args(["tasks", "list"]), "verbose", False) is False


def test_third_party_progress_bars_are_silenced_unless_verbose(monkeypatch, capsys) -> None:
    for name in QUIET_ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    assert main(["--verbose", "tasks", "list", "--json"]) == 0
    assert "HF_HUB_DISABLE_PROGRESS_BARS" not in os.environ
    assert main(["tasks", "list", "--json"]) == 0
    assert os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "1" and os.environ["TRANSFORMERS_VERBOSITY"] == "error"
    capsys.readouterr()


def test_tasks_list_keeps_bracketed_shapes_and_fits_80_columns(monkeypatch, capsys) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["tasks", "list", "--level", "2"]) == 0
    wide = capsys.readouterr().out
    assert "[batch, heads, seq, head_dim]" in wide  # rich markup would have swallowed it
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["tasks", "list"]) == 0
    narrow = capsys.readouterr().out
    lines = narrow.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert len(lines) < 70  # one line per task (45) plus a title, a header and a note
    assert "core/L2/decode_attention_gqa" in narrow and "akg tasks show ID" in narrow
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["tasks", "list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert any("[batch, heads, seq, head_dim]" in row["description"] for row in rows)


def test_kb_tables_escape_markup_and_fit_80_columns(monkeypatch, capsys) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["kb", "list"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80
    assert main(["kb", "search", "requires 3145728 bits while 1572864 bits available", "--no-dense"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "ub-overflow-compile-error" in out and r"requires \d+ bits" in out  # the trigger regex, unmangled
