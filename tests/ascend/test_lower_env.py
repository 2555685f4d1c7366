"""The triton-ascend environment (ascend/lower_env.py, ``akg ascend``): where it lives, what counts as
finished, what a sandbox must allow, and what the user is told when something is missing."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ascend_kernel_gym.ascend import lower_env
from ascend_kernel_gym.ascend.lower_env import (
    MANIFEST,
    TRITON_ASCEND_VERSION,
    env_dir,
    env_status,
    find_python,
    load_env,
    setup_env,
)
from ascend_kernel_gym.cli import main as akg


def fake_env(root: Path, version: str = TRITON_ASCEND_VERSION) -> Path:
    """A directory that looks like a finished environment (nothing in it runs)."""
    (root / "bin").mkdir(parents=True)
    python = root / "bin" / "python"
    python.write_text("#!/bin/sh\n")
    adapter = root / "lib" / "triton" / "backends" / "ascend" / "triton-adapter-opt"
    adapter.parent.mkdir(parents=True)
    adapter.write_text("#!/bin/sh\n")
    adapter.chmod(0o755)
    manifest = {
        "triton_ascend": version,
        "python_version": "3.11.7",
        "adapter": str(adapter),
        "base_prefix": "/opt/pythons/3.11",
        "stdlib": ["/opt/pythons/3.11/lib/python3.11"],
        "site": [str(root / "lib" / "site-packages")],
        "libdir": "/opt/pythons/3.11/lib",
        "size_mb": 193.0,
    }
    (root / MANIFEST).write_text(json.dumps(manifest))
    return root


def test_the_environment_lives_in_the_package_cache_unless_named(monkeypatch, tmp_path) -> None:
    monkeypatch.delenv(lower_env.ENV_DIR_VAR, raising=False)
    monkeypatch.setenv("AKG_CACHE_DIR", str(tmp_path / "cache"))
    assert env_dir() == tmp_path / "cache" / f"triton-ascend-{TRITON_ASCEND_VERSION}"
    monkeypatch.setenv(lower_env.ENV_DIR_VAR, str(tmp_path / "elsewhere"))
    assert env_dir() == tmp_path / "elsewhere"


def test_only_a_finished_environment_of_this_version_loads(tmp_path) -> None:
    assert load_env(tmp_path / "missing") is None
    env = load_env(fake_env(tmp_path / "ok"))
    assert env is not None and env.triton_ascend == TRITON_ASCEND_VERSION
    assert str(tmp_path / "ok") in env.read_paths and "/opt/pythons/3.11" in env.read_paths  # its own prefix
    assert str(env.adapter) in env.exec_paths and str(env.python) in env.exec_paths
    assert load_env(fake_env(tmp_path / "old", version="3.1.0")) is None
    unfinished = fake_env(tmp_path / "unfinished")
    (unfinished / MANIFEST).unlink()
    assert load_env(unfinished) is None
    gone = fake_env(tmp_path / "gone")
    os.chmod(json.loads((gone / MANIFEST).read_text())["adapter"], 0o644)  # no longer executable
    assert load_env(gone) is None


def test_status_says_how_to_get_it_and_doctor_shows_it(monkeypatch, tmp_path, capsys) -> None:
    monkeypatch.setenv(lower_env.ENV_DIR_VAR, str(tmp_path / "none"))
    status = env_status()
    assert not status["ready"] and "akg ascend setup" in status["hint"] and status["why"] == "not set up"
    assert akg(["ascend", "status"]) == 1 and "akg ascend setup" in capsys.readouterr().err
    monkeypatch.setenv(lower_env.ENV_DIR_VAR, str(fake_env(tmp_path / "ready")))
    assert env_status()["ready"] and akg(["ascend", "status", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["triton_ascend"] == TRITON_ASCEND_VERSION
    from ascend_kernel_gym.tasks.cli import doctor_report

    assert doctor_report()["ascend_lower"]["ready"] is True


def test_setup_reuses_a_finished_environment_without_running_anything(monkeypatch, tmp_path) -> None:
    root = fake_env(tmp_path / "env")
    monkeypatch.setattr(lower_env, "find_python", lambda *a: pytest.fail("must not look for a Python"))
    lines: list[str] = []
    env = setup_env(progress=lines.append, path=root)
    assert env.path == root and "already set up" in lines[0] and len(lines) == 1


def test_no_usable_python_says_exactly_what_to_install(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(lower_env, "_candidates", lambda: iter([]))
    with pytest.raises(RuntimeError, match=r"no CPython 3\.10 or 3\.11 found.*apt-get install python3\.11"):
        find_python()
    with pytest.raises(RuntimeError, match=r"is not a working CPython 3\.10 or 3\.11"):
        find_python(str(tmp_path / "no-such-python"))
    with pytest.raises(RuntimeError, match="no CPython"):
        setup_env(progress=lambda _line: None, path=tmp_path / "env")
