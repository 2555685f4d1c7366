"""Turning a task's source into live objects. Imports torch: use only in evaluator children,
tests and tools, never at package import."""

from __future__ import annotations

import types
from dataclasses import dataclass
from typing import Any

from ascend_kernel_gym.tasks.task import Task, TaskLoadError


@dataclass
class TaskModule:
    """A task file executed with one profile's constants."""

    module: types.ModuleType
    profile: str

    @property
    def Model(self) -> type:  # noqa: N802 - mirrors the task file's name
        return self.module.Model

    def get_inputs(self) -> list[Any]:
        return self._input_list("get_inputs", "model(*get_inputs())")

    def get_init_inputs(self) -> list[Any]:
        return self._input_list("get_init_inputs", "Model(*get_init_inputs())")

    def _input_list(self, function: str, usage: str) -> list[Any]:
        """The function's list (or tuple) of arguments. Anything else is the task's mistake, never
        spread into arguments: a bare tensor would become one argument per row."""
        value = getattr(self.module, function)()
        if isinstance(value, (list, tuple)):
            return list(value)
        where = getattr(self.module, "__file__", None) or "the task file"
        raise TaskLoadError(
            f"{where}: {function}() must return a list of inputs (the harness calls {usage}), "
            f"got {type(value).__name__}; the task file must be fixed (wrap it: return [x])"
        )


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
