"""The compile stage (evaluation/compile_stage.py) in real children, through the session pool: the task's
reference is checked before any candidate code runs, the candidate is imported and built, and it gets
the reference's parameters and buffers."""

from __future__ import annotations

import pytest

from ascend_kernel_gym.evaluation import ErrorType, EvalRequest, EvalResult, Stage
from ascend_kernel_gym.tasks import load_task_source

#: A task file; FORWARD and INIT are filled in per case.
TASK = """import torch
import torch.nn as nn

TASK = {"profiles": {"small": {"N": 32}}}

B = 4
N = 32


class Model(nn.Module):
    def __init__(self):
        super().__init__()
INIT

    def forward(self, x):
FORWARD


def get_inputs():
    return [torch.randn(B, N)]


def get_init_inputs():
    return []
"""

#: The reference keeps a random weight (a parameter) and a random shift (a buffer outside the state dict).
SCALED_INIT = """        self.scale = nn.Parameter(torch.randn(N))
        self.register_buffer("shift", torch.randn(N), persistent=False)"""

#: A candidate with its own (different) random weight and shift: it matches the reference only when
#: the harness copies the reference's values in, by name and shape.
SCALED_CANDIDATE = """import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_shift_kernel(x_ptr, scale_ptr, shift_ptr, out_ptr, n_elements, n_cols, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    cols = offsets % n_cols
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    scale = tl.load(scale_ptr + cols, mask=mask, other=0.0)
    shift = tl.load(shift_ptr + cols, mask=mask, other=0.0)
    tl.store(out_ptr + offsets, x * scale + shift, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.SCALE_NAME = nn.Parameter(torch.randn(32) + 5.0)
        self.register_buffer("shift", torch.randn(32) - 5.0, persistent=False)

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        scale_shift_kernel[(triton.cdiv(n, 128),)](x, self.SCALE_NAME, self.shift, out, n, x.shape[1], BLOCK=128)
        return out
"""


def task(name: str, forward: str, init: str = "        pass"):
    return load_task_source(TASK.replace("INIT", init).replace("FORWARD", forward), task_id=f"t/{name}")


@pytest.fixture(scope="module")
def results(evaluator, relu_solution) -> dict[str, EvalResult]:
    relu = task("relu", "        return torch.relu(x)")
    scaled = task("scaled", "        return x * self.scale + self.shift", SCALED_INIT)
    cases = {
        "random reference": (task("noisy", "        return x + torch.rand_like(x)"), relu_solution),
        "dict output": (task("dict", "        return {'y': torch.relu(x)}"), relu_solution),
        "reference raises": (task("raises", "        return x @ torch.ones(3, 3)"), relu_solution),
        "constructor raises": (relu, relu_solution.replace("super().__init__()", "raise ValueError('no init')")),
        "import raises": (relu, relu_solution.replace("MAX_PROGRAMS = 4096", "MAX_PROGRAMS = 4096 // 0")),
        "not callable": (relu, relu_solution.replace("class ModelNew(nn.Module):", "class ModelNew:")),
        "copied by name": (scaled, SCALED_CANDIDATE.replace("SCALE_NAME", "scale")),
        "other name": (scaled, SCALED_CANDIDATE.replace("SCALE_NAME", "weight")),
    }
    requests = [EvalRequest(task=t, code=code, profile="full", num_trials=2, seed=5) for t, code in cases.values()]
    return dict(zip(cases, evaluator.evaluate_many(requests)))


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("random reference", "different outputs for the same inputs"),
        ("dict output", "the reference returns a value of type dict"),
        ("reference raises", "could not be built or run on the task's own inputs: RuntimeError"),
    ],
)
def test_a_reference_that_cannot_be_matched_is_the_tasks_problem(results, case: str, message: str) -> None:
    result = results[case]
    assert result.error_type == ErrorType.HARNESS_ERROR and message in result.error_message, result.error_message
    assert not result.correct and not result.hack and result.trials_total == 0  # the candidate never ran


def test_candidate_failures_while_importing_and_building_name_what_failed(results) -> None:
    imported = results["import raises"]
    assert imported.error_type == ErrorType.COMPILE_ERROR and imported.stage == Stage.COMPILE
    assert "importing your code failed" in imported.error_message and "ZeroDivisionError" in imported.error_message
    built = results["constructor raises"]
    assert built.error_type == ErrorType.RUNTIME_ERROR and "ModelNew(...) failed" in built.error_message
    assert "no init" in built.error_message
    plain = results["not callable"]
    assert plain.error_type == ErrorType.RUNTIME_ERROR and "not callable" in plain.error_message


def test_the_candidate_gets_the_references_parameters_and_non_persistent_buffers(results) -> None:
    copied = results["copied by name"]
    assert copied.ok and copied.trials_passed == 2, copied.error_message
    # the same kernel with its weight under another name keeps its own random values (the shift
    # is still copied): the outputs differ
    other = results["other name"]
    assert other.compiled and other.error_type == ErrorType.VALUE_MISMATCH, other.error_message
