"""Turning a task into live objects (tasks/runtime.py): profiles applied to a fresh module each time,
input lists checked at run time, KernelBench files run unchanged."""

from __future__ import annotations

import sys
import traceback
from pathlib import Path

import pytest

from ascend_kernel_gym.tasks import TaskLoadError, load_task_file, load_task_source

torch = pytest.importorskip("torch")

from ascend_kernel_gym.tasks.runtime import exec_source, instantiate  # noqa: E402

GEMM = Path(__file__).parent.parent / "data" / "kernelbench" / "level2" / "12_Gemm_Multiply_LeakyReLU.py"

BARE_TENSOR = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    {body}


def get_init_inputs():
    return []
"""

SCALED = """import torch
import torch.nn as nn

TASK = {"profiles": {"small": {"N": 8}}}

N = 1024
SCALE = 3.0


class Model(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return x * self.scale


def get_inputs():
    return [torch.randn(N)]


def get_init_inputs():
    return INIT_INPUTS


def _scale():  # hides the returned value from the loader's static check
    return SCALE
"""


def test_get_inputs_that_is_not_a_list_at_run_time_is_a_task_error(tmp_path) -> None:
    """Not visible in the source (a helper makes the tensor): the runtime refuses it instead of
    spreading the tensor's rows into four arguments."""
    pytest.importorskip("torch")
    from ascend_kernel_gym.tasks.runtime import instantiate

    body = "return _make()\n\n\ndef _make():\n    return torch.randn(4, 32)"
    path = tmp_path / "bare_helper.py"
    path.write_text(BARE_TENSOR.format(body=body))
    tm = instantiate(load_task_file(path))
    with pytest.raises(TaskLoadError, match=r"bare_helper\.py: get_inputs\(\) must return a list.*got Tensor"):
        tm.get_inputs()
    assert tm.get_init_inputs() == []


def test_tuple_and_list_returns_are_accepted(tmp_path) -> None:
    pytest.importorskip("torch")
    from ascend_kernel_gym.tasks.runtime import instantiate

    path = tmp_path / "tuple_inputs.py"
    path.write_text(BARE_TENSOR.format(body="x = torch.randn(4, 32)\n    return (x,)"))
    (x,) = instantiate(load_task_file(path)).get_inputs()
    assert tuple(x.shape) == (4, 32)


def test_kernelbench_file_runs_unchanged_through_runtime():
    torch = pytest.importorskip("torch")
    from ascend_kernel_gym.tasks.runtime import instantiate

    task = load_task_file(GEMM)
    tm = instantiate(task)
    model = tm.Model(*tm.get_init_inputs())
    (x,) = tm.get_inputs()
    out = model(x)
    assert out.shape == (128, 512)
    expected = torch.nn.functional.leaky_relu(model.gemm(x) * 2.0, 0.1)
    assert torch.allclose(out, expected)


def test_each_instance_is_a_fresh_unregistered_module_with_its_profiles_constants():
    task = load_task_source(SCALED.replace("INIT_INPUTS", "[SCALE]"), task_id="t/scaled")
    small = instantiate(task, "small")
    assert small.profile == "small" and small.module.N == 8 and small.get_inputs()[0].shape == (8,)
    small.module.N = 99  # what one evaluation does to its module never reaches the next one
    again = instantiate(task, "small")
    assert again.module is not small.module and again.module.N == 8
    full = instantiate(task)  # no profile: the file's own sizes
    assert full.profile == "full" and full.get_inputs()[0].shape == (1024,)
    assert "akg_task_scaled" not in sys.modules and full.module.__file__ == "<task t/scaled>"
    (x,) = full.get_inputs()
    assert torch.equal(full.Model(*full.get_init_inputs())(x), x * 3.0)
    with pytest.raises(KeyError, match="no profile 'tiny'"):
        instantiate(task, "tiny")


def test_get_init_inputs_must_return_a_list_too():
    tm = instantiate(load_task_source(SCALED.replace("INIT_INPUTS", "_scale()"), task_id="t/bare_init"))
    with pytest.raises(TaskLoadError, match=r"get_init_inputs\(\) must return a list.*\(the harness calls Model\("):
        tm.get_init_inputs()
    with pytest.raises(TaskLoadError, match="got float"):
        tm.get_init_inputs()
    assert instantiate(load_task_source(SCALED.replace("INIT_INPUTS", "()"), task_id="t/empty")).get_init_inputs() == []


def test_exec_source_names_the_file_in_tracebacks(tmp_path):
    module = exec_source("X = 1\n\ndef boom():\n    raise ValueError('x')\n", "akg_probe", str(tmp_path / "probe.py"))
    assert module.X == 1 and module.__name__ == "akg_probe" and "akg_probe" not in sys.modules
    with pytest.raises(ValueError) as info:
        module.boom()
    frame = traceback.extract_tb(info.value.__traceback__)[-1]
    assert (frame.filename, frame.lineno) == (str(tmp_path / "probe.py"), 4)
