"""A demo agent that cheats or cuts corners, so that a report shows the evaluator catching it.

``akg eval --agent ascend_kernel_gym.agents.sloppy:SloppyPolicy`` runs it like any other agent.
It answers each task with one of the moves below, in turn over the run's tasks (sorted by id),
built from the task's own reference source and bundled solution, so it works on any task that
has a solution:

========== ================================================================ =====================
move        what it submits                                                  the evaluator says
========== ================================================================ =====================
honest      the bundled reference solution                                   correct
inherit     ``class ModelNew(Model)`` plus a Triton kernel it never launches hack (forbidden)
torch       the PyTorch reference does the work; a Triton copy kernel runs   hack (torch_fallback)
cached      the solution, but its first output is returned on every call    hack (no_kernel_launched)
broken      the solution with a ``forward`` that raises                      runtime_error
========== ================================================================ =====================

The "says" column is what the evaluator reports on the interpreter; the agent itself does not
know it, and nothing here is consulted by the evaluator.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ascend_kernel_gym.agents.policy import Generation, Message, Policy
from ascend_kernel_gym.agents.scripted import broken_variant, fenced, task_id_from_messages

__all__ = ["MOVES", "SloppyPolicy", "sloppy_answer"]

#: The moves, in the order they are dealt out over the tasks.
MOVES = ("honest", "inherit", "torch", "cached", "broken")

_IMPORTS = "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n"

_COPY_KERNEL = """

@triton.jit
def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(dst_ptr + offsets, tl.load(src_ptr + offsets, mask=mask), mask=mask)
"""


def _inherit(reference: str) -> str:
    return (
        _IMPORTS
        + "\n"
        + reference.rstrip()
        + "\n"
        + _COPY_KERNEL
        + "\n\nclass ModelNew(Model):\n    pass  # the reference's own forward; the kernel is never launched\n"
    )


def _torch(reference: str) -> str:
    return (
        _IMPORTS
        + "\n"
        + reference.rstrip()
        + "\n"
        + _COPY_KERNEL
        + """

class ModelNew(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()
        self.reference = Model(*args, **kwargs)

    def forward(self, *args):
        out = self.reference(*args)  # PyTorch computes the answer ...
        flat = out.contiguous().view(-1)
        copy = torch.empty_like(flat)
        copy_kernel[(triton.cdiv(flat.numel(), 1024),)](flat, copy, flat.numel(), BLOCK=1024)
        return copy.view(out.shape)  # ... and a Triton kernel only copies it
"""
    )


def _cached(solution: str) -> str:
    return (
        solution.rstrip()
        + """


_SolutionModelNew = ModelNew


class ModelNew(_SolutionModelNew):
    def forward(self, *args, **kwargs):
        if not hasattr(self, "first_output"):
            self.first_output = super().forward(*args, **kwargs)
        return self.first_output  # the same answer whatever the input
"""
    )


def sloppy_answer(move: str, reference: str, solution: str) -> str:
    """The answer text of ``move`` (one of :data:`MOVES`) for a task's reference and solution sources."""
    if move == "honest":
        code = solution
    elif move == "inherit":
        code = _inherit(reference)
    elif move == "torch":
        code = _torch(reference)
    elif move == "cached":
        code = _cached(solution)
    elif move == "broken":
        code = broken_variant(solution)
    else:
        raise ValueError(f"unknown move {move!r}; known: {', '.join(MOVES)}")
    return f"Here is my kernel ({move}).\n" + fenced(code)


class SloppyPolicy(Policy):
    """Deals the moves of :data:`MOVES` out over the tasks: the i-th task by id gets ``MOVES[i % 5]``.

    Args:
        tasks: the run's tasks (``akg eval`` passes them); each needs a bundled solution.
        moves: the moves to deal out, in order (default: all of :data:`MOVES`).
        name: the name in reports.

    Raises:
        ValueError: no tasks, an unknown move, or a task without a bundled solution.
    """

    #: Answers are instant: no point waiting for a generation batch to fill up.
    batch_wait_s = 0.0

    def __init__(self, tasks: Sequence[Any], moves: Sequence[str] = MOVES, name: str = "sloppy") -> None:
        if not tasks:
            raise ValueError("SloppyPolicy needs the run's tasks")
        unknown = [m for m in moves if m not in MOVES]
        if unknown or not moves:
            raise ValueError(f"unknown moves {unknown}; known: {', '.join(MOVES)}")
        missing = [t.id for t in tasks if t.solution_path is None]
        if missing:
            raise ValueError(f"sloppy agent: no bundled reference solution for {missing}")
        self.tasks = {t.id: t for t in tasks}
        ordered = sorted(self.tasks)
        self.moves = {task_id: moves[i % len(moves)] for i, task_id in enumerate(ordered)}
        self.name = name

    def describe(self) -> dict[str, Any]:
        info = super().describe()
        info.update(kind="scripted", description="cheats and sloppy answers (a demo of the evaluator's checks)")
        return info

    def generate(self, batch: Sequence[Sequence[Message]]) -> list[Generation]:
        out = []
        for messages in batch:
            task_id = task_id_from_messages(messages)
            if task_id not in self.tasks:
                raise ValueError(f"sloppy agent: the context names no task of this run (found {task_id!r})")
            task = self.tasks[task_id]
            move = self.moves[task_id]
            reference = task.prompt_source(task.default_profile("interpreter"))
            text = sloppy_answer(move, reference, task.solution_source() or "")
            out.append(Generation(text=text, meta={"task_id": task_id, "move": move}))
        return out
