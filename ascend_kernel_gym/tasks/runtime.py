"""Turning a task's source into live objects. Imports torch: use only in evaluator children,
tests and tools, never at package import."""

from __future__ import annotations

import os
import types
from dataclasses import dataclass
from typing import Any

from ascend_kernel_gym.tasks.cases import ShapeCase, main_case_group
from ascend_kernel_gym.tasks.constants import parse_literal_key
from ascend_kernel_gym.tasks.groups import groups_file, materialise
from ascend_kernel_gym.tasks.rewrite import apply_profile, literal_overrides
from ascend_kernel_gym.tasks.task import Task, TaskLoadError


@dataclass
class TaskModule:
    """A task file executed with one profile's constants (or one shape case's).

    Attributes:
        module: the executed file.
        profile: the profile it was instantiated at.
        case: the shape case, ``None`` for the profile's main shape.
        group: for a ``get_input_groups()`` file, the index of the group ``get_inputs()`` returns
            among the groups the module builds (``None`` for other files).
    """

    module: types.ModuleType
    profile: str
    case: ShapeCase | None = None
    group: int | None = None

    @property
    def Model(self) -> type:  # noqa: N802 - mirrors the task file's name
        return self.module.Model

    def get_inputs(self) -> list[Any]:
        if self.group is not None or not hasattr(self.module, "get_inputs"):
            return self._group_inputs()
        return self._input_list("get_inputs", "model(*get_inputs())")

    def _group_inputs(self) -> list[Any]:
        groups = self.module.get_input_groups()
        index = self.group or 0
        where = getattr(self.module, "__file__", None) or "the task file"
        if not isinstance(groups, (list, tuple)) or not 0 <= index < len(groups):
            count = len(groups) if isinstance(groups, (list, tuple)) else type(groups).__name__
            raise TaskLoadError(f"{where}: get_input_groups() has no group {index} (it returned {count})")
        group = groups[index]
        if not isinstance(group, (list, tuple)):
            raise TaskLoadError(
                f"{where}: get_input_groups() must return a list of input lists, group {index} is "
                f"{type(group).__name__}; the task file must be fixed"
            )
        return list(group)

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


def exec_source(source: str, module_name: str, filename: str, module_file: str | None = None) -> types.ModuleType:
    """Execute ``source`` as a fresh module (not registered in ``sys.modules``).

    ``filename`` names the code in tracebacks; ``module_file`` is the module's ``__file__`` when
    it differs (a task whose data files were written elsewhere: :func:`.groups.materialise`).
    """
    module = types.ModuleType(module_name)
    module.__file__ = module_file or filename
    code = compile(source, filename, "exec")
    exec(code, module.__dict__)
    return module


def instantiate(task: Task, profile: str | None = None, case: ShapeCase | None = None) -> TaskModule:
    """Run the task file at ``profile`` (default ``full``), or at one of its shape cases.

    Module constants of the profile (or of ``case.overrides``) are set after the file has run;
    literal sizes inside functions are written into the source before it runs. A task that
    carries data files (:attr:`Task.files`) runs with ``__file__`` in a private directory holding
    them; for a ``get_input_groups()`` file the case's group is the only line of its case file,
    and ``get_inputs()`` returns that group.
    """
    profile = profile or "full"
    task.check_profile(profile)
    overrides = case.overrides if case is not None else task.profiles[profile]
    group = case.group if case is not None else main_case_group(task, profile)
    if group is not None and not task.uses_input_groups:
        name = case.name if case is not None else "main"
        raise TaskLoadError(f"task {task.id!r} has no get_input_groups(), but shape case {name!r} names group {group}")
    source = task.source
    if literal_overrides(overrides):
        source = apply_profile(task.source, overrides, drop_task=False)
    filtered = group is not None and groups_file(task.files) is not None
    file_name = os.path.basename(task.path) if task.path else f"{task.name}.py"
    module_file = materialise(task.files, file_name, group if filtered else None)
    module = exec_source(source, f"akg_task_{task.name}", task.path or f"<task {task.id}>", module_file)
    for name, value in overrides.items():
        if parse_literal_key(name) is None:
            setattr(module, name, value)
    index = (0 if filtered else group) if group is not None else None
    return TaskModule(module=module, profile=profile, case=case, group=index)
