"""Task files that define ``get_input_groups()`` (MultiKernelBench's NPUKernelBench-derived files).

Such a file returns one input list per case instead of ``get_inputs()``, usually built from a
JSON-lines file beside it (``os.path.join(os.path.dirname(__file__), "1_gelu.json")``), one line
per case::

    {"inputs": [{"name": "x", "type": "tensor", "dtype": "float16", "shape": [17, 301]},
                {"name": "approximate", "type": "attr", "dtype": "str", "value": "tanh"}]}

The loader reads the data files a task file names (string literals ending in ``.json`` /
``.jsonl``, or ``<stem>.json`` when the file builds the name from ``__file__``) into
:attr:`Task.files`, so the task carries them wherever it goes (pickled jobs, the remote evaluator,
the leaderboard). At run time :func:`materialise` writes them to a private directory and the
task module's ``__file__`` points there; for one case only that case's line is written, so
``get_input_groups()`` builds only the tensors of the case asked for.
"""

from __future__ import annotations

import ast
import atexit
import hashlib
import json
import math
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

#: data files a task file may carry (bytes); larger ones are a load error
MAX_FILE_BYTES = 8 * 1024 * 1024
_DATA_NAME = re.compile(r"^[\w.\-]+\.jsonl?$")


@dataclass(frozen=True)
class InputGroup:
    """One case of a ``get_input_groups()`` file, as its JSON line describes it."""

    index: int
    #: shapes of its tensor inputs (``()`` for a 0-dim tensor)
    shapes: tuple[tuple[int, ...], ...]
    dtypes: tuple[str, ...]
    #: elements of its tensor inputs; ``None`` when the line does not say
    elements: int | None

    def describe(self) -> str:
        shapes = ", ".join(f"{d}{list(s)}" for s, d in zip(self.shapes, self.dtypes, strict=True))
        return f"group {self.index}: {shapes or 'no tensors'}"


def referenced_files(tree: ast.Module, stem: str) -> list[str]:
    """Names of the data files a task file reads beside itself."""
    names: list[str] = []
    uses_file = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            base = os.path.basename(node.value)
            if _DATA_NAME.match(base) and base not in names:
                names.append(base)
        elif isinstance(node, ast.Name) and node.id == "__file__":
            uses_file = True
    if not names and uses_file:
        source_strings = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
        for suffix in (".json", ".jsonl"):
            if suffix in source_strings:  # splitext(basename(__file__))[0] + ".json"
                names.append(stem + suffix)
    return names


def read_files(folder: Path, names: list[str]) -> tuple[tuple[tuple[str, str], ...], list[str]]:
    """``((name, text), ...)`` of the named files in ``folder``, and the names that are missing."""
    found: list[tuple[str, str]] = []
    missing: list[str] = []
    for name in names:
        path = folder / name
        if not path.is_file():
            missing.append(name)
            continue
        if path.stat().st_size > MAX_FILE_BYTES:
            raise ValueError(f"{path}: data file larger than {MAX_FILE_BYTES} bytes")
        found.append((name, path.read_text(encoding="utf-8")))
    return tuple(found), missing


def _group_of(index: int, line: str) -> InputGroup | None:
    try:
        case = json.loads(line)
    except ValueError:
        return None
    entries = case.get("inputs") if isinstance(case, dict) else None
    if not isinstance(entries, list):
        return None
    shapes: list[tuple[int, ...]] = []
    dtypes: list[str] = []
    known = True
    for entry in entries:
        if not isinstance(entry, dict) or entry.get("type", "tensor") != "tensor":
            continue
        shape = entry.get("shape")
        if shape is None:
            continue  # an optional tensor left out
        if not (isinstance(shape, list) and all(isinstance(s, int) and not isinstance(s, bool) for s in shape)):
            known = False
            continue
        shapes.append(tuple(shape))
        dtypes.append(str(entry.get("dtype", "float32")))
    elements = sum(math.prod(s) for s in shapes) if known else None
    return InputGroup(index, tuple(shapes), tuple(dtypes), elements)


def groups_file(files: tuple[tuple[str, str], ...]) -> tuple[str, list[str]] | None:
    """``(name, lines)`` of the data file whose lines are cases (``{"inputs": [...]}``)."""
    for name, text in files:
        lines = [line for line in text.splitlines() if line.strip()]
        if lines and _group_of(0, lines[0]) is not None:
            return name, lines
    return None


def input_groups(files: tuple[tuple[str, str], ...]) -> list[InputGroup] | None:
    """The cases of a ``get_input_groups()`` task as its data file (:attr:`Task.files`) lists
    them; ``None`` when the file builds its groups in code (known only by running it)."""
    found = groups_file(files)
    if found is None:
        return None
    groups = [_group_of(i, line) for i, line in enumerate(found[1])]
    return [g if g is not None else InputGroup(i, (), (), None) for i, g in enumerate(groups)]


def main_group(groups: list[InputGroup] | None, budget: int | None) -> tuple[int, str]:
    """The group the main case uses: the first, or with a budget the first within it."""
    if not groups:
        return 0, ""
    if budget is None:
        return 0, ""
    for group in groups:
        if group.elements is not None and group.elements <= budget:
            if group.index == 0:
                return 0, ""
            return group.index, f"main case is group {group.index} (the first within {budget:,} elements)"
    return 0, f"no group is within the budget of {budget:,} elements; main case is group 0"


def groups_note(files: tuple[tuple[str, str], ...], budget: int) -> str:
    """What the ``small`` profile of a ``get_input_groups()`` task runs, for ``akg tasks show``."""
    groups = input_groups(files)
    if groups is None:
        return "inputs from get_input_groups(), built in code: group 0 is the main case, no other case is listed"
    index, _ = main_group(groups, budget)
    sizes = [g.elements for g in groups if g.elements is not None]
    within = sum(1 for e in sizes if e <= budget)
    main = groups[index]
    elements = f"{main.elements:,}" if main.elements is not None else "unknown"
    return (
        f"inputs from get_input_groups(): {len(groups)} cases in {groups_file(files)[0]}, {within} within the "
        f"budget of {budget:,} elements (largest {max(sizes, default=0):,}); main case group {index} "
        f"({elements} input elements)"
    )


#: (content digest, process id) -> directory; per process, because a forked child (an evaluation
#: child in its sandbox) may not see its parent's temporary directory and must not delete it
_MATERIALISED: dict[tuple[str, int], str] = {}


def _cleanup() -> None:
    for (_, pid), folder in list(_MATERIALISED.items()):
        if pid == os.getpid():
            shutil.rmtree(folder, ignore_errors=True)


atexit.register(_cleanup)


def materialise(files: tuple[tuple[str, str], ...], file_name: str, group: int | None = None) -> str | None:
    """Write a task's data files (:attr:`Task.files`) to a private directory (once per process and
    case) and return the path the task module's ``__file__`` should have (``<dir>/<file_name>``),
    or ``None`` when there are none. With ``group``, the case file holds that case's line only."""
    if not files:
        return None
    found = groups_file(files) if group is not None else None
    digest = hashlib.sha256(repr((files, group)).encode()).hexdigest()[:16]
    key = (digest, os.getpid())
    folder = _MATERIALISED.get(key)
    if folder is None or not os.path.isdir(folder):
        folder = tempfile.mkdtemp(prefix="akg-task-files-")
        for name, text in files:
            if found is not None and name == found[0]:
                lines = found[1]
                text = lines[group] + "\n" if group is not None and 0 <= group < len(lines) else ""
            Path(folder, name).write_text(text, encoding="utf-8")
        _MATERIALISED[key] = folder
    return os.path.join(folder, os.path.basename(file_name))
