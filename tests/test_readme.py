"""The README's commands, in order, as a newcomer runs them after ``make demo``.

Every ```bash block runs line by line in a scratch directory that links the repository's
``examples/``, ``bench/``, ``tests/``, ``Makefile`` and ``pyproject.toml`` (so the README's relative
paths resolve, and the outputs land in the scratch directory), with ``akg`` and ``python`` on
``PATH`` pointing at this interpreter (``python -m ascend_kernel_gym.cli``). Each line must exit
0 and print no traceback. A few lines are run in a short mode instead:

- set-up lines (``python3 -m venv``, ``pip install``, ``. .venv/bin/activate``): not run, since
  this test runs inside the installed environment (``make demo`` from a fresh virtualenv checks
  them for real);
- ``make TARGET``: ``make -n TARGET`` (the target exists and its recipe expands), since ``make
  test`` would run this very suite;
- ``.venv/bin/python -m pytest ARGS``: ``--collect-only``;
- ``python bench/X.py``: ``--help``.

Every ```python block runs as a script, except one preceded by ``<!-- readme-test: skip ... -->``.
```text blocks are for other machines (an Ascend server) and are not run.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
LINKED = ("examples", "bench", "tests", "Makefile", "pyproject.toml", "ascend_kernel_gym")
SKIP_MARK = "<!-- readme-test: skip"
SETUP = re.compile(r"^(python3 -m venv\b|pip (install|uninstall)\b|\. \.venv/bin/activate\b)")


def readme_blocks(text: str) -> list[tuple[str, str, bool]]:
    """``(language, body, skipped)`` of every fenced block, in order."""
    blocks = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        match = re.match(r"^```(\w*)\s*$", lines[i])
        if not match:
            i += 1
            continue
        skipped = i > 0 and lines[i - 1].startswith(SKIP_MARK)
        end = i + 1
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        blocks.append((match.group(1), "\n".join(lines[i + 1 : end]), skipped))
        i = end + 1
    return blocks


def shell_lines(body: str) -> list[str]:
    return [line for line in body.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def short_mode(line: str) -> str | None:
    """The command this test runs for a README line (``None``: not run)."""
    command = line.split(" #")[0].strip()
    if SETUP.match(command):
        return None
    words = shlex.split(command)
    if words[0] == "make":
        return shlex.join(["make", "-n", *words[1:]])
    if words[0].endswith("python") and words[1:3] == ["-m", "pytest"]:
        return shlex.join(["python", "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *words[3:]])
    if words[0] == "python" and len(words) > 1 and words[1].startswith("bench/"):
        return shlex.join(["python", words[1], "--help"])
    return command


def test_readme_blocks_are_all_covered() -> None:
    blocks = readme_blocks(README.read_text(encoding="utf-8"))
    languages = {lang for lang, _, _ in blocks}
    assert languages <= {"bash", "python", "text"}, f"a block in a language this test does not run: {languages}"
    commands = [line for lang, body, _ in blocks if lang == "bash" for line in shell_lines(body)]
    assert any(c.startswith("akg eval") for c in commands) and any(c.startswith("akg leaderboard") for c in commands)
    for line in commands:
        placeholder = "path/to" in line or re.search(r"(^|\s)\[", line.split(" #")[0])  # e.g. "[--json]"
        assert not placeholder, f"not runnable verbatim: {line}"


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("readme")
    for name in LINKED:
        (root / name).symlink_to(ROOT / name)
    bin_dir = tmp_path_factory.mktemp("readme-bin")
    (bin_dir / "akg").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m ascend_kernel_gym.cli "$@"\n')
    (bin_dir / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    for shim in ("akg", "python"):
        (bin_dir / shim).chmod(0o755)
    env = dict(os.environ)
    env.update(
        PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        PYTHONPATH=str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else ""),
        COLUMNS="80",
    )
    return root, env


@pytest.mark.slow
def test_readme_commands_run_in_order(scratch) -> None:
    root, env = scratch
    ran = []
    for lang, body, skipped in readme_blocks(README.read_text(encoding="utf-8")):
        if skipped or lang == "text":
            continue
        if lang == "python":
            done = subprocess.run(
                [sys.executable, "-c", body], cwd=root, env=env, capture_output=True, text=True, timeout=600
            )
            assert done.returncode == 0, f"README python block failed:\n{body}\n---\n{done.stderr[-3000:]}"
            ran.append(body.splitlines()[0])
            continue
        for line in shell_lines(body):
            command = short_mode(line)
            if command is None:
                continue
            done = subprocess.run(
                ["bash", "-c", command], cwd=root, env=env, capture_output=True, text=True, timeout=900
            )
            output = done.stdout + done.stderr
            assert done.returncode == 0, f"README command failed ({done.returncode}): {line}\n{output[-3000:]}"
            assert "Traceback" not in output, f"README command printed a traceback: {line}\n{output[-3000:]}"
            ran.append(line)
    assert any(line.startswith("akg verify") for line in ran)
    # The publish sequence: the verification report sits beside the submission, and the page shows it.
    assert (root / "runs/submissions/reference.verify.json").is_file()
    page = (root / "site/index.html").read_text(encoding="utf-8")
    assert "verified (interpreter)" in page and "not verified" not in page
