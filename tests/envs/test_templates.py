from __future__ import annotations

from pathlib import Path

import pytest

from ascend_kernel_gym.envs.templates import BUNDLED_PROMPT_DIR, fill, load_templates


def test_npu_prompt_states_the_ascend_rules() -> None:
    task = load_templates("npu").task
    for needle in [
        '"npu"', "import", "torch_npu", "num_warps", "65535", "192 KB", "32 bytes", "fp32", "num_vectorcore",
        "num_aicore", "tl.num_programs(0)", "{{reference_source}}", "ModelNew", "@triton.jit",
    ]:  # fmt: skip
        assert needle in task.replace("`npu`", '"npu"'), needle


def test_backends_have_their_own_prompts() -> None:
    npu, cuda, interp = (load_templates(b).task for b in ("npu", "cuda", "interpreter"))
    assert len({npu, cuda, interp}) == 3
    assert "torch_npu" not in cuda and "torch_npu" not in interp
    assert "speed is not measured" in interp and "CPU" in interp
    assert "CUDA events" in cuda


def test_prompt_dir_overrides_only_the_files_it_has(tmp_path: Path) -> None:
    (tmp_path / "interpreter.md").write_text("Do {{task_id}}:\n{{reference_source}}\n")
    templates = load_templates("interpreter", tmp_path)
    assert templates.task.startswith("Do {{task_id}}")
    assert templates.system == (BUNDLED_PROMPT_DIR / "system.md").read_text()
    assert str(tmp_path / "interpreter.md") in templates.sources


def test_bad_templates_are_rejected_with_the_file_name(tmp_path: Path) -> None:
    (tmp_path / "cuda.md").write_text("{{reference_source}} {{no_such_thing}}")
    with pytest.raises(ValueError, match=r"cuda\.md.*no_such_thing"):
        load_templates("cuda", tmp_path)
    (tmp_path / "cuda.md").write_text("no reference here")
    with pytest.raises(ValueError, match="reference_source"):
        load_templates("cuda", tmp_path)
    with pytest.raises(ValueError, match="not a directory"):
        load_templates("cuda", tmp_path / "missing")
    with pytest.raises(ValueError, match="backend"):
        load_templates("tpu")


def test_fill_does_not_expand_placeholders_inside_values() -> None:
    assert fill("a {{x}} b", {"x": "{{y}}"}) == "a {{y}} b"


def test_npu_prompt_instructions_pass_the_static_stage() -> None:
    from ascend_kernel_gym.evaluation import check_source
    from ascend_kernel_gym.tasks import get_task

    source = get_task("core/L1/relu").solution_source()
    header = "import torch\nimport torch.nn as nn\nimport torch_npu\nimport triton\nimport triton.language as tl\n"
    report = check_source(header + source)
    assert report.ok, report.message()
    capture = header + source + "\n\ndef capture():\n    return torch_npu.npu.NPUGraph()\n"
    assert not check_source(capture).ok  # graph capture stays refused through torch_npu
