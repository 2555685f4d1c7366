"""Capturing launches without running kernels: records at the ``full`` shapes on ``meta`` tensors."""

from __future__ import annotations

import sys

import pytest

from ascend_kernel_gym.ascend.capture import capture_launches, exec_candidate
from ascend_kernel_gym.tasks.runtime import exec_source
from ascend_kernel_gym.tasks.suite import get_task


def test_relu_launch_at_full_shapes_without_running_it() -> None:
    from triton.runtime.jit import JITFunction

    run = JITFunction.run
    task = get_task("core/L1/relu")
    (launch,) = capture_launches(task, task.solution_source(), "full")
    # full profile: a 4096 x 16384 fp32 input; the solution caps the grid at 4096 programs
    assert launch.kernel == "relu_kernel" and launch.grid == [4096]
    assert launch.constexprs == {"BLOCK_SIZE": 1024}
    assert launch.tensor_args == [[[4096, 16384], "float32"]] * 2
    assert launch.num_warps is None and launch.num_stages is None
    assert JITFunction.run is run  # restored


def test_host_code_that_needs_data_fails_clearly() -> None:
    task = get_task("core/L1/relu")
    code = task.solution_source().replace("n = x.numel()", "n = int(x.sum().item())")
    with pytest.raises(RuntimeError, match="capturing launches on meta failed"):
        capture_launches(task, code, "full")


def test_exec_candidate_runs_the_source_from_a_real_file() -> None:
    import inspect

    module = exec_candidate("def f():\n    return 41 + 1\n", exec_source)
    assert module.f() == 42 and sys.modules[module.__name__] is module
    assert "return 41 + 1" in inspect.getsource(module.f)  # what Triton needs to read kernel source
