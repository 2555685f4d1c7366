"""The exact element count of a task's inputs and parameters, on torch's ``meta`` device.

The loader estimates sizes from the AST (:mod:`.sizes`); this runs the task file instead, with
every tensor on the ``meta`` device (shapes only, nothing allocated), so it is exact where the
file runs at all. It imports torch: :func:`measure_elements` is for processes that already have
torch (the evaluator's children, the bench); :func:`measure_in_subprocess` keeps torch out of
the caller (``akg tasks show --measure``).
"""

from __future__ import annotations

import ast
import json
import pickle
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

from ascend_kernel_gym.tasks.cases import ShapeCase
from ascend_kernel_gym.tasks.constants import evaluate_steps
from ascend_kernel_gym.tasks.profiles import Deriver
from ascend_kernel_gym.tasks.task import Task


@dataclass(frozen=True)
class Measured:
    """Elements of one instantiation of a task (``error`` set when the file did not run)."""

    inputs: int = 0
    parameters: int = 0
    error: str = ""

    @property
    def total(self) -> int:
        return self.inputs + self.parameters


def _numel(value: Any, depth: int = 0) -> int:
    import torch

    if isinstance(value, torch.Tensor):
        return value.numel()
    if depth < 8 and isinstance(value, (list, tuple)):
        return sum(_numel(v, depth + 1) for v in value)
    if depth < 8 and isinstance(value, dict):
        return sum(_numel(v, depth + 1) for v in value.values())
    return 0


def measure_elements(
    task: Task, profile: str | None = None, case: ShapeCase | None = None, cpu_limit: int = 20_000_000
) -> Measured:
    """Inputs (``get_inputs()``) and parameters, buffers and tensor init arguments of
    ``Model(*get_init_inputs())``, counted on the ``meta`` device. A file that does not run there
    (``.item()`` on an input, a sampler that needs values) is counted with real CPU tensors when
    the loader's estimate of its size is complete and at most ``cpu_limit``. Never raises."""
    import torch
    from torch.overrides import TorchFunctionMode

    from ascend_kernel_gym.tasks.runtime import instantiate

    class _Redirect(TorchFunctionMode):
        def __init__(self, device: str) -> None:
            super().__init__()
            self.device = device

        def __torch_function__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None) -> Any:
            kwargs = dict(kwargs or {})
            if getattr(func, "__name__", "") in ("cuda", "npu") and args and isinstance(args[0], torch.Tensor):
                return args[0]
            if "device" in kwargs:
                kwargs["device"] = self.device
            if func is torch.Tensor.to and len(args) > 1 and isinstance(args[1], (str, torch.device)):
                args = (args[0], *args[2:])
            return func(*args, **kwargs)

    def count(device: str) -> Measured:
        tm = instantiate(task, profile, case)
        with torch.device(device), _Redirect(device):
            init = tm.get_init_inputs()
            model = tm.Model(*init)
            inputs = tm.get_inputs()
        parameters = _numel(init)
        if isinstance(model, torch.nn.Module):
            parameters += sum(p.numel() for p in model.parameters()) + sum(b.numel() for b in model.buffers())
        return Measured(_numel(inputs), parameters)

    try:
        return count("meta")
    except Exception as exc:  # noqa: BLE001 - any failure of the task file is reported, not raised
        error = f"{type(exc).__name__}: {str(exc)[:300]}"
    estimate = _estimate(task, profile, case)
    if estimate is None or estimate > cpu_limit:
        return Measured(error=f"{error} (on the meta device; too large or unknown to count on the CPU)")
    try:
        return count("cpu")
    except Exception as exc:  # noqa: BLE001
        return Measured(error=f"{type(exc).__name__}: {str(exc)[:300]}")


def _estimate(task: Task, profile: str | None, case: ShapeCase | None) -> int | None:
    """The loader's AST estimate of the elements at ``profile`` / ``case`` (``None``: unknown)."""
    overrides = case.overrides if case is not None else task.profiles[profile or "full"]
    deriver = Deriver(ast.parse(task.source))
    constants = evaluate_steps(deriver.steps, overrides={k: v for k, v in overrides.items() if "@" not in k})
    estimate = deriver.estimate(constants, deriver.literals_with(overrides, False, {}))
    return estimate.total if estimate.complete else None


def measure_in_subprocess(task: Task, profiles: list[str], timeout_s: float = 120.0) -> dict[str, Measured]:
    """:func:`measure_elements` for each profile, in a child Python (torch stays out of this process)."""
    payload = pickle.dumps((task, profiles))
    try:
        done = subprocess.run(
            [sys.executable, "-m", __name__],
            input=payload,
            capture_output=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {p: Measured(error=f"timed out after {timeout_s:.0f} s") for p in profiles}
    try:
        data = json.loads(done.stdout.decode().strip().splitlines()[-1])
    except (ValueError, IndexError):
        error = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
        return {p: Measured(error=error[0][:300]) for p in profiles}
    return {p: Measured(**data[p]) for p in profiles}


def _main() -> None:
    task, profiles = pickle.loads(sys.stdin.buffer.read())  # noqa: S301 - from the parent process, trusted
    out = {}
    for profile in profiles:
        m = measure_elements(task, profile)
        out[profile] = {"inputs": m.inputs, "parameters": m.parameters, "error": m.error}
    print(json.dumps(out))


if __name__ == "__main__":
    _main()
