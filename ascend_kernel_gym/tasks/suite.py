"""Suites: directories of task files with reference solutions and a deterministic split.

Layout of a suite directory::

    <suite>/tasks/L1/relu.py        task files (KernelBench format + optional TASK metadata)
    <suite>/solutions/L1/relu.py    reference Triton solutions (define ModelNew), same relative path

Bundled suites live in ``ascend_kernel_gym/tasks/suites/``; any directory with that layout
(or a flat directory of KernelBench files) works as a suite too.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

from ascend_kernel_gym.tasks.task import Task, TaskLoadError, UnknownTaskError, load_task_file

SUITES_DIR = Path(__file__).parent / "suites"
SPLITS = ("train", "test", "all")
#: One task in every TEST_EVERY of each level (by hash order) goes to the test split.
TEST_EVERY = 5


def bundled_suites() -> list[str]:
    return sorted(p.name for p in SUITES_DIR.iterdir() if (p / "tasks").is_dir())


def _suite_dir(suite: str | Path) -> tuple[str, Path]:
    candidate = Path(suite)
    if candidate.is_dir():
        return candidate.resolve().name, candidate.resolve()
    bundled = SUITES_DIR / str(suite)
    if bundled.is_dir():
        return str(suite), bundled
    raise ValueError(f"unknown suite {suite!r}: not a directory and not one of the bundled suites {bundled_suites()}")


def _assign_splits(tasks: list[Task]) -> list[Task]:
    """Stratified by level, ordered by a hash of the id: stable across machines and runs."""
    from dataclasses import replace

    out: list[Task] = []
    by_level: dict[int, list[Task]] = {}
    for task in tasks:
        by_level.setdefault(task.level, []).append(task)
    for level_tasks in by_level.values():
        ordered = sorted(level_tasks, key=lambda t: hashlib.sha256(t.id.encode()).hexdigest())
        for index, task in enumerate(ordered):
            split = task.split or ("test" if index % TEST_EVERY == 0 else "train")
            out.append(replace(task, split=split))
    return sorted(out, key=lambda t: (t.level, t.id))


@lru_cache(maxsize=16)
def _load_suite_cached(suite_dir: str, suite_name: str) -> tuple[Task, ...]:
    root = Path(suite_dir)
    task_root = root / "tasks" if (root / "tasks").is_dir() else root
    solution_root = root / "solutions"
    tasks: list[Task] = []
    seen: dict[str, Path] = {}
    for path in sorted(task_root.rglob("*.py")):
        if path.name.startswith("_"):
            continue
        rel = path.relative_to(task_root)
        solution = solution_root / rel
        task = load_task_file(path, suite=suite_name, solution_path=solution if solution.is_file() else None)
        if task.id in seen:
            raise TaskLoadError(f"{path}: duplicate task id {task.id!r} (also in {seen[task.id]})")
        seen[task.id] = path
        tasks.append(task)
    if not tasks:
        raise TaskLoadError(f"{task_root}: suite has no task files")
    return tuple(_assign_splits(tasks))


def load_suite(
    suite: str | Path = "core",
    *,
    split: str = "all",
    levels: Iterable[int] | None = None,
    task_ids: Iterable[str] | None = None,
) -> list[Task]:
    """Load a suite's tasks, filtered by split, levels and ids (in suite order)."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    name, root = _suite_dir(suite)
    tasks = list(_load_suite_cached(str(root), name))
    if split != "all":
        tasks = [t for t in tasks if t.split == split]
    if levels is not None:
        wanted_levels = set(levels)
        tasks = [t for t in tasks if t.level in wanted_levels]
    if task_ids is not None:
        wanted = list(task_ids)
        by_id = {t.id: t for t in tasks}
        unknown = [i for i in wanted if i not in by_id]
        if unknown:
            raise UnknownTaskError(f"unknown task ids {unknown} in suite {name!r} (split={split!r})")
        tasks = [by_id[i] for i in wanted]
    return tasks


def get_task(id_or_path: str | Path) -> Task:
    """A bundled task by id (``core/L1/relu``), or any task file by path."""
    text = str(id_or_path)
    path = Path(text)
    if path.suffix == ".py" or path.is_file():
        return load_task_file(path)
    suite = text.split("/", 1)[0]
    if suite not in bundled_suites():
        raise UnknownTaskError(f"{text!r} is neither a task file nor a task id of a bundled suite {bundled_suites()}")
    return load_suite(suite, task_ids=[text])[0]
