"""Quality gate for every task of the bundled ``core`` suite (``small`` profile, Triton interpreter).

For each task, whatever its level:

* its reference output is finite and changes when its inputs change;
* degenerate answers (all zeros, a constant, the first input returned unchanged) fail its own
  correctness check (``torch.allclose`` with the task's ``atol`` / ``rtol``);
* its bundled reference Triton solution (``ModelNew``) matches the reference for several seeds,
  with the reference's parameters loaded into it (``load_state_dict(strict=True)``), launches at
  least one Triton kernel and leaves its inputs untouched;
* outside its Triton kernels, that solution calls no PyTorch compute: only allocation, views,
  ``contiguous`` and shape / stride queries.

Tasks are read with ``load_suite("core")``, so tasks added later are checked with no change here.
"""

from __future__ import annotations

import functools
from collections import Counter
from typing import Any

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")

from torch.overrides import TorchFunctionMode  # noqa: E402

from ascend_kernel_gym.tasks import load_suite  # noqa: E402
from ascend_kernel_gym.tasks.runtime import TaskModule, exec_source, instantiate  # noqa: E402
from ascend_kernel_gym.tasks.task import Task  # noqa: E402

# Evaluates many kernels end to end: left out of the fast lane (`make test-fast`).
pytestmark = pytest.mark.slow

SUITE = "core"
PROFILE = "small"
#: (model seed, input seed) pairs for the solution check: parameters and inputs both vary.
SOLUTION_CASES = ((0, 100), (1, 101), (2, 102))
#: The reference is run with one model and two input seeds for the input-dependence check.
DEPENDENCE_CASES = ((0, 100), (0, 101))
MIN_TASKS = 40
MIN_PER_LEVEL = {1: 20, 2: 12, 3: 4}
#: PyTorch calls a reference solution may make outside its kernels (by method / function name):
#: allocation, views, ``contiguous``, shape / stride / attribute queries. Anything else is compute.
ALLOWED_TORCH_CALLS = frozenset(
    {
        "__get__", "__getitem__", "__len__", "__format__", "__repr__", "__hash__", "__index__",
        "contiguous", "is_contiguous", "dim", "ndimension", "numel", "nelement", "size", "stride",
        "storage_offset", "data_ptr", "element_size", "get_device", "is_floating_point", "detach",
        "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided",
        "zeros", "zeros_like", "new_zeros",
        "view", "view_as", "reshape", "reshape_as", "flatten", "unflatten", "squeeze", "unsqueeze",
        "expand", "expand_as", "permute", "transpose", "t", "as_strided", "narrow", "select",
        "split", "chunk", "unbind", "movedim",
    }
)  # fmt: skip

TASKS: list[Task] = load_suite(SUITE)
TASKS_BY_ID = {task.id: task for task in TASKS}
TASK_IDS = list(TASKS_BY_ID)


# ----------------------------------------------------------------------------------------------- helpers


@functools.cache
def _task_module(task_id: str) -> TaskModule:
    task = TASKS_BY_ID[task_id]
    assert PROFILE in task.profiles, f"{task_id}: core tasks need a {PROFILE!r} profile, has {sorted(task.profiles)}"
    return instantiate(task, PROFILE)


@functools.cache
def _solution_module(task_id: str) -> Any:
    task = TASKS_BY_ID[task_id]
    source = task.solution_source()
    assert source is not None, f"{task_id}: no bundled reference solution"
    module = exec_source(source, f"akg_solution_{task.name}", task.solution_path or f"<solution {task_id}>")
    assert hasattr(module, "ModelNew"), f"{task_id}: solution {task.solution_path} defines no ModelNew"
    return module


def _init_inputs(tm: TaskModule, model_seed: int) -> list[Any]:
    torch.manual_seed(model_seed)
    return tm.get_init_inputs()


def _make_model(cls: type, init_inputs: list[Any], model_seed: int) -> Any:
    torch.manual_seed(model_seed)
    return cls(*init_inputs).eval()


def _make_inputs(tm: TaskModule, input_seed: int) -> list[Any]:
    torch.manual_seed(input_seed)
    return tm.get_inputs()


def _clone(values: list[Any]) -> list[Any]:
    return [v.clone() if isinstance(v, torch.Tensor) else v for v in values]


def _as_tensors(output: Any) -> list[Any]:
    if isinstance(output, torch.Tensor):
        return [output]
    if isinstance(output, (tuple, list)) and output and all(isinstance(o, torch.Tensor) for o in output):
        return list(output)
    raise AssertionError(f"forward must return a tensor or a tuple of tensors, got {type(output).__name__}")


@functools.cache
def _reference_run(task_id: str, model_seed: int, input_seed: int) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """(inputs, outputs) of the reference ``Model`` on the small profile; cached across tests."""
    tm = _task_module(task_id)
    init = _init_inputs(tm, model_seed)
    model = _make_model(tm.Model, init, model_seed)
    inputs = _make_inputs(tm, input_seed)
    with torch.no_grad():
        outputs = _as_tensors(model(*_clone(inputs)))
    return tuple(inputs), tuple(o.detach() for o in outputs)


def _close(candidate: Any, reference: Any, task: Task) -> bool:
    return bool(torch.allclose(candidate, reference, atol=task.atol, rtol=task.rtol))


def _constant_like(reference: Any, source: Any) -> Any:
    """``source``'s mean broadcast to ``reference``'s shape and dtype (rounded for integer outputs)."""
    mean = source.double().mean().item()
    return torch.full_like(reference, mean if reference.is_floating_point() else round(mean))


# ----------------------------------------------------------------------------------------------- suite


def test_suite_has_enough_tasks_over_three_levels():
    """Issue 2: at least 40 tasks over levels 1-3 (L1 >= 20, L2 >= 12, L3 >= 4), each with a solution."""
    per_level = Counter(task.level for task in TASKS)
    summary = ", ".join(f"L{level}: {per_level.get(level, 0)}" for level in sorted(set(per_level) | set(MIN_PER_LEVEL)))
    short = {level: need for level, need in MIN_PER_LEVEL.items() if per_level.get(level, 0) < need}
    assert len(TASKS) >= MIN_TASKS and not short, (
        f"suite {SUITE!r} has {len(TASKS)} tasks ({summary}); needs >= {MIN_TASKS} with at least "
        f"{MIN_PER_LEVEL} per level; levels short: {short}"
    )
    without_solution = [task.id for task in TASKS if task.solution_path is None]
    assert not without_solution, f"tasks without a bundled reference solution: {without_solution}"


def test_task_ids_follow_the_suite_layout():
    for task in TASKS:
        assert task.id == f"{SUITE}/L{task.level}/{task.name}", task.id
        assert task.split in ("train", "test"), task.id


# ----------------------------------------------------------------------------------------------- per task


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_reference_output_depends_on_inputs(task_id: str):
    task = TASKS_BY_ID[task_id]
    (_, first), (_, second) = (_reference_run(task_id, *case) for case in DEPENDENCE_CASES)
    for a, b in zip(first, second, strict=True):
        if a.is_floating_point():
            assert torch.isfinite(a).all() and torch.isfinite(b).all(), f"{task_id}: reference output has NaN/inf"
    changed = any(a.shape != b.shape or not _close(a, b, task) for a, b in zip(first, second, strict=True))
    assert changed, f"{task_id}: the reference gives the same output for two different input seeds"


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_degenerate_outputs_fail_the_check(task_id: str):
    task = TASKS_BY_ID[task_id]
    inputs, reference = _reference_run(task_id, *DEPENDENCE_CASES[0])
    _, other_reference = _reference_run(task_id, *DEPENDENCE_CASES[1])
    candidates: dict[str, list[Any]] = {
        "all zeros": [torch.zeros_like(r) for r in reference],
        # A constant fixed in advance: what the reference gives on average for other inputs.
        "constant (mean of the reference output for other inputs)": [
            _constant_like(r, o) for r, o in zip(reference, other_reference, strict=True)
        ],
    }
    if all(r.numel() > 1 for r in reference):
        candidates["constant (mean of the reference output)"] = [_constant_like(r, r) for r in reference]
    first = inputs[0] if inputs else None
    if len(reference) == 1 and isinstance(first, torch.Tensor) and first.shape == reference[0].shape:
        candidates["first input unchanged"] = [first.to(reference[0].dtype)]
    passing = [
        name
        for name, outs in candidates.items()
        if all(_close(out, ref, task) for out, ref in zip(outs, reference, strict=True))
    ]
    assert not passing, (
        f"{task_id}: degenerate answers pass its correctness check (atol={task.atol}, rtol={task.rtol}): {passing}"
    )


class _TorchCallRecorder(TorchFunctionMode):
    """Counts the PyTorch functions called while active, except inside Triton kernel launches."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: Counter[str] = Counter()
        self.inside_kernel = 0

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        if not self.inside_kernel:
            self.calls[getattr(func, "__name__", None) or repr(func)] += 1
        return func(*args, **(kwargs or {}))


class _KernelLaunches(list):
    """Names of the Triton kernels launched (on the interpreter); pauses a recorder during launches."""

    recorder: _TorchCallRecorder | None = None


@pytest.fixture
def kernel_launches(monkeypatch: pytest.MonkeyPatch) -> _KernelLaunches:
    from triton.runtime.interpreter import InterpretedFunction

    launches = _KernelLaunches()
    original = InterpretedFunction.run

    def recording_run(self: Any, *args: Any, **kwargs: Any) -> Any:
        launches.append(getattr(self.fn, "__name__", "?"))
        recorder = launches.recorder
        if recorder is not None:
            recorder.inside_kernel += 1
        try:
            return original(self, *args, **kwargs)
        finally:
            if recorder is not None:
                recorder.inside_kernel -= 1

    monkeypatch.setattr(InterpretedFunction, "run", recording_run)
    return launches


def _solution_model(task_id: str, model_seed: int) -> Any:
    """``ModelNew`` seeded like the reference, with the reference's state_dict loaded (strict)."""
    tm = _task_module(task_id)
    init = _init_inputs(tm, model_seed)
    ref_model = _make_model(tm.Model, init, model_seed)
    new_model = _make_model(_solution_module(task_id).ModelNew, init, model_seed)
    new_model.load_state_dict(ref_model.state_dict(), strict=True)
    return new_model


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_reference_solution_matches_reference(task_id: str, kernel_launches: _KernelLaunches):
    task = TASKS_BY_ID[task_id]
    for model_seed, input_seed in SOLUTION_CASES:
        where = f"{task_id} (model seed {model_seed}, input seed {input_seed})"
        inputs, reference = _reference_run(task_id, model_seed, input_seed)
        new_model = _solution_model(task_id, model_seed)
        given = _clone(list(inputs))
        launched_before = len(kernel_launches)
        with torch.no_grad():
            outputs = _as_tensors(new_model(*given))
        assert len(kernel_launches) > launched_before, f"{where}: ModelNew launched no Triton kernel"
        for original, after in zip(inputs, given, strict=True):
            if isinstance(original, torch.Tensor):
                assert torch.equal(original, after), f"{where}: ModelNew modified one of its inputs"
        assert len(outputs) == len(reference), f"{where}: {len(outputs)} outputs, expected {len(reference)}"
        for index, (out, ref) in enumerate(zip(outputs, reference, strict=True)):
            assert out.shape == ref.shape, f"{where}: output {index} shape {tuple(out.shape)} != {tuple(ref.shape)}"
            assert out.dtype == ref.dtype, f"{where}: output {index} dtype {out.dtype} != {ref.dtype}"
            if not _close(out, ref, task):
                err = (out.double() - ref.double()).abs().max().item()
                pytest.fail(f"{where}: output {index} max abs error {err:.3g} (atol={task.atol}, rtol={task.rtol})")


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_reference_solution_computes_only_in_triton(task_id: str, kernel_launches: _KernelLaunches):
    model_seed, input_seed = SOLUTION_CASES[0]
    inputs, _ = _reference_run(task_id, model_seed, input_seed)
    new_model = _solution_model(task_id, model_seed)
    given = _clone(list(inputs))
    recorder = _TorchCallRecorder()
    kernel_launches.recorder = recorder
    with torch.no_grad(), recorder:
        new_model(*given)
    assert kernel_launches, f"{task_id}: ModelNew launched no Triton kernel"
    compute = {name: count for name, count in recorder.calls.items() if name not in ALLOWED_TORCH_CALLS}
    assert not compute, (
        f"{task_id}: the reference solution calls PyTorch outside its Triton kernels: {compute} "
        f"(allowed: allocation, views, contiguous, shape/stride queries)"
    )
