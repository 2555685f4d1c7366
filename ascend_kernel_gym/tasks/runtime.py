"""Turning a task's source into live objects. Imports torch: use only in evaluator children,
tests and tools, never at package import."""

from __future__ import annotations

import types
from dataclasses import dataclass
from typing import Any

from ascend_kernel_gym.tasks.task import Task


@dataclass
class TaskModule:
    """A task file executed with one profile's constants."""

    module: types.ModuleType
    profile: str

    @property
    def Model(self) -> type:  # noqa: N802 - mirrors the task file's name
        return self.module.Model

    def get_inputs(self) -> list[Any]:
        return list(self.module.get_inputs())

    def get_init_inputs(self) -> list[Any]:
        return list(self.module.get_init_inputs())


def exec_source(source: str, module_name: str, filename: str) -> types.ModuleType:
    """Execute ``source`` as a fresh module (not registered in ``sys.modules``)."""
    module = types.ModuleType(module_name)
    module.__file__ = filename
    code = compile(source, filename, "exec")
    exec(code, module.__dict__)
    return module


def instantiate(task: Task, profile: str | None = None) -> TaskModule:
    """Run the task file and apply ``profile``'s constant overrides."""
    profile = profile or "full"
    task.check_profile(profile)
    module = exec_source(task.source, f"akg_task_{task.name}", task.path or f"<task {task.id}>")
    for name, value in task.profiles[profile].items():
        setattr(module, name, value)
    return TaskModule(module=module, profile=profile)
