"""Running estimates: in a separate interpreter process, and re-executed under the interpreter in this one."""

from __future__ import annotations

import pytest

from ascend_kernel_gym.ascend.cost_process import estimate_kernel


def test_estimate_variants_run_in_a_separate_interpreter_process() -> None:
    from ascend_kernel_gym.ascend.cost_process import estimate_variants
    from ascend_kernel_gym.tasks.suite import get_task

    task = get_task("core/L1/relu")
    good, broken = estimate_variants(
        task, [task.solution_source(), "raise RuntimeError('nope')\n"], "small", "910B3", max_programs=4
    )
    assert "error" not in good, good.get("error")
    assert good["label"] == "estimate" and good["chip"] == "910B3" and good["profile"] == "small"
    # small profile: 16 x 1000 fp32, read once and written once
    assert good["min_bytes"] == 2 * 16 * 1000 * 4
    assert good["bytes"] == pytest.approx(2 * 16 * 1000 * 4)
    assert 0 < good["est_roofline_fraction"] <= 1
    assert good["est_ms"] > good["roofline_ms"]
    assert "nope" in broken["error"]  # one failing candidate does not stop the others
    with pytest.raises(TypeError):
        estimate_kernel(task, None, "small")  # type: ignore[arg-type]


def test_estimate_in_process_reexecutes_the_source_under_the_interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    import torch

    from ascend_kernel_gym.ascend.cost_process import estimate_in_process
    from ascend_kernel_gym.tasks.runtime import instantiate
    from ascend_kernel_gym.tasks.suite import get_task

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)  # as in a CUDA / NPU evaluator child
    task = get_task("core/L1/softmax")
    tm = instantiate(task, "small")
    torch.manual_seed(0)
    reference = tm.Model(*tm.get_init_inputs())
    inputs = tm.get_inputs()
    result = estimate_in_process(task.solution_source(), tm.get_init_inputs(), inputs, "910B3", reference=reference)
    assert "TRITON_INTERPRET" not in os.environ  # restored
    x = inputs[0]
    assert result["min_bytes"] == 2 * x.numel() * x.element_size()
    # a softmax reads its rows at least once and writes them once
    assert result["bytes"] >= result["min_bytes"]
    assert result["label"] == "estimate" and 0 < result["est_roofline_fraction"] <= 1
