"""Tasks: the model, the loader and the bundled suites."""

from ascend_kernel_gym.tasks.suite import bundled_suites, get_task, load_suite
from ascend_kernel_gym.tasks.task import Task, TaskLoadError, UnknownTaskError, load_task_file, load_task_source

__all__ = [
    "Task",
    "TaskLoadError",
    "UnknownTaskError",
    "bundled_suites",
    "get_task",
    "load_suite",
    "load_task_file",
    "load_task_source",
]
