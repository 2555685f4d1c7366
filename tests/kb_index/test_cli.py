"""``akg kb list|search|build``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ascend_kernel_gym.cli import main


def test_kb_list_json_and_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["kb", "list", "--json"]) == 0
    entries = json.loads(capsys.readouterr().out)
    assert len(entries) >= 80 and {"id", "title", "tags", "triggers", "source", "body"} <= set(entries[0])
    assert main(["kb", "list", "--tag", "ub"]) == 0
    out = capsys.readouterr().out
    assert "ub-overflow-compile-error" in out and "eval-timeout" not in out


def test_kb_search_json_with_and_without_dense(capsys: pytest.CaptureFixture[str]) -> None:
    query = "ub overflow, requires 3145728 bits while 1572864 bits available"
    assert main(["kb", "search", query, "-k", "2", "--json", "--no-dense"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["query"] == query and data["hits"][0]["id"] == "ub-overflow-compile-error"
    assert data["hits"][0]["score"] is None and data["hits"][0]["why"].startswith("trigger: ")
    assert main(["kb", "search", "how many programs should my grid launch on the NPU", "-k", "3", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["hits"]) == 3 and all(h["why"] == "dense" and h["score"] > 0 for h in data["hits"])
    assert main(["kb", "search", "coreDim=70000 can't be greater than UINT16_MAX", "--show-body"]) == 0
    assert "grid-uint16-max-coredim" in capsys.readouterr().out


def test_kb_build_reports_a_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["kb", "build"]) == 0
    out = capsys.readouterr().out
    assert "entries" in out and "cache path" in out and "all-MiniLM-L6-v2@" in out


def test_kb_errors_exit_with_code_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["kb", "search", "x", "-k", "0"]) == 2
    assert "-k must be >= 1" in capsys.readouterr().err
    assert main(["kb", "list", "--extra-dir", str(tmp_path / "nope")]) == 2
    assert "does not exist" in capsys.readouterr().err
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "x.md").write_text("---\nid: x\n---\nbody")
    assert main(["kb", "list", "--extra-dir", str(bad)]) == 2
    assert str(bad / "x.md") in capsys.readouterr().err
