"""MultiKernelBench-style task files with get_input_groups() and a JSON-lines data file beside them
(tasks/groups.py): they load, carry their data inside the Task, run anywhere, give the data file's
shapes, and build only the group asked for (tests/data/mkb_corpus/)."""

from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path

import pytest

from ascend_kernel_gym.cli import main as akg
from ascend_kernel_gym.tasks import TaskLoadError, get_task
from ascend_kernel_gym.tasks.groups import input_groups, materialise

DATA = Path(__file__).parent.parent / "data" / "mkb_corpus"
GELU = DATA / "1_gelu_groups.py"
ADD = DATA / "2_add_broadcast_groups.py"
RMS = DATA / "3_rms_norm_groups.py"
CODE = DATA / "4_leaky_matmul_code_groups.py"


def sidecar_shapes(path: Path) -> list[list[list[int]]]:
    lines = path.read_text().splitlines()
    return [[i["shape"] for i in json.loads(line)["inputs"] if i["type"] == "tensor"] for line in lines if line]


def test_group_files_load_and_carry_their_data_file() -> None:
    task = get_task(str(GELU))
    assert task.uses_input_groups
    assert task.files == (("1_gelu_groups.json", GELU.with_suffix(".json").read_text()),)
    groups = input_groups(task.files)
    assert [list(g.shapes[0]) for g in groups] == [s[0] for s in sidecar_shapes(GELU.with_suffix(".json"))]
    assert groups[0].elements == 4096 * 18432
    # the small profile picks the first group within the budget and says so
    assert "main case group 1" in task.profile_note("small") and "8 cases" in task.profile_note("small")


def test_a_jsonl_file_and_a_name_built_from_dunder_file_are_found() -> None:
    assert [name for name, _ in get_task(str(ADD)).files] == ["2_add_broadcast_groups.jsonl"]
    assert [name for name, _ in get_task(str(RMS)).files] == ["3_rms_norm_groups.json"]


def test_get_inputs_gives_the_first_group_on_full_and_the_first_small_group_on_small() -> None:
    pytest.importorskip("torch")
    from ascend_kernel_gym.tasks.runtime import instantiate

    task = get_task(str(ADD))
    x, y = instantiate(task, "full").get_inputs()
    assert [list(x.shape), list(y.shape)] == [[3], [3]]
    gelu = get_task(str(GELU))
    x, approximate = instantiate(gelu, "small").get_inputs()
    assert list(x.shape) == [128] and approximate == "tanh"


def test_each_group_case_gives_that_lines_shapes_including_a_0_dim_tensor() -> None:
    pytest.importorskip("torch")
    from ascend_kernel_gym.tasks.runtime import instantiate

    task = get_task(str(ADD))
    expected = sidecar_shapes(ADD.with_suffix(".jsonl"))
    cases = task.shape_cases("full")
    assert [c.group for c in cases] == [0, 1, 2, 3, 4]
    for case in cases:
        tm = instantiate(task, "full", case)
        inputs = tm.get_inputs()
        assert [list(t.shape) for t in inputs] == expected[case.group], case.name
        assert tm.Model(*tm.get_init_inputs())(*inputs).shape is not None


def test_group_cases_within_a_budget_put_odd_shapes_first_and_skip_huge_ones() -> None:
    task = get_task(str(GELU))
    cases = task.shape_cases("small", budget_elems=task.size_budget, max_cases=2)
    assert cases[0].name == "main" and cases[0].group == 1
    assert [c.name for c in cases[1:]] == ["group2", "group3"]  # [17, 301] and [7, 15, 23]: no block size divides them
    assert "2 of 8 groups above the budget" in cases[0].note
    assert all(c.elements <= task.size_budget for c in cases)


def test_only_the_case_asked_for_is_built(tmp_path) -> None:
    task = get_task(str(RMS))
    path = materialise(task.files, "3_rms_norm_groups.py", group=2)
    lines = (Path(path).parent / "3_rms_norm_groups.json").read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["inputs"][0]["shape"] == [2, 1000]
    pytest.importorskip("torch")
    from ascend_kernel_gym.tasks.runtime import instantiate

    huge = next(c for c in task.shape_cases("full") if c.group == 3)  # 16384 x 16384: not built for group 2
    x, gamma, eps = instantiate(task, "full", task.shape_cases("full")[2]).get_inputs()
    assert list(x.shape) == [2, 1000] and list(gamma.shape) == [1000] and eps == 1e-6
    assert huge.elements == 16384 * 16384 + 16384


def test_the_task_travels_without_its_folder(tmp_path) -> None:
    pytest.importorskip("torch")
    from ascend_kernel_gym.tasks.runtime import instantiate

    folder = tmp_path / "mkb"
    folder.mkdir()
    for name in ("1_gelu_groups.py", "1_gelu_groups.json"):
        shutil.copy(DATA / name, folder / name)
    task = pickle.loads(pickle.dumps(get_task(str(folder / "1_gelu_groups.py"))))
    shutil.rmtree(folder)  # the data now lives only inside the Task
    case = next(c for c in task.shape_cases("full") if c.group == 2)
    x, approximate = instantiate(task, "full", case).get_inputs()
    assert list(x.shape) == [17, 301] and approximate == "none"


def test_a_missing_data_file_is_a_load_error_naming_it(tmp_path, capsys) -> None:
    path = tmp_path / "1_gelu_groups.py"
    shutil.copy(GELU, path)
    with pytest.raises(TaskLoadError, match=r"reads 1_gelu_groups\.json, which is not beside the task file"):
        get_task(str(path))
    assert akg(["tasks", "show", str(path)]) == 2


def test_groups_built_in_code_use_group_zero_and_say_so() -> None:
    pytest.importorskip("torch")
    from ascend_kernel_gym.tasks.runtime import instantiate

    task = get_task(str(CODE))
    assert task.files == () and "built in code" in task.profile_note("small")
    cases = task.shape_cases("small")
    assert len(cases) == 1 and cases[0].group == 0 and "only group 0" in cases[0].note
    a, b = instantiate(task, "small").get_inputs()
    assert (list(a.shape), list(b.shape)) == ([64, 32], [32, 48])


def test_akg_tasks_show_lists_the_data_file_and_the_cases(capsys) -> None:
    assert akg(["tasks", "show", str(GELU), "--profile", "small", "--cases"]) == 0
    out = capsys.readouterr().out
    assert "1_gelu_groups.json (carried inside the task)" in out
    assert "case         main group 1: 128 elements" in out and "group2 group 2" in out


def test_the_source_hash_covers_the_data_files(tmp_path) -> None:
    import hashlib

    folder = tmp_path / "mkb"
    folder.mkdir()
    for name in ("1_gelu_groups.py", "1_gelu_groups.json"):
        shutil.copy(DATA / name, folder / name)
    before = get_task(str(folder / "1_gelu_groups.py")).source_hash
    with (folder / "1_gelu_groups.json").open("a") as handle:
        handle.write(json.dumps({"inputs": [{"name": "x", "type": "tensor", "dtype": "float32", "shape": [5]}]}) + "\n")
    assert get_task(str(folder / "1_gelu_groups.py")).source_hash != before  # an evaluation cache key changes
    plain = get_task(str(DATA / "4_leaky_matmul_code_groups.py"))
    assert plain.source_hash == hashlib.sha256(plain.source.encode()).hexdigest()  # unchanged without files


def test_a_forked_child_writes_its_own_copy_and_leaves_the_parents(tmp_path) -> None:
    import os

    from ascend_kernel_gym.tasks import groups

    task = get_task(str(GELU))
    parent = materialise(task.files, "1_gelu_groups.py", group=2)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its own directory; its exit hook removes only its own
        child = materialise(task.files, "1_gelu_groups.py", group=2)
        os.write(write, child.encode())
        groups._cleanup()
        os._exit(0)
    os.close(write)
    child = os.read(read, 4096).decode()
    os.waitpid(pid, 0)
    assert child and child != parent
    assert Path(parent).parent.is_dir() and not Path(child).parent.exists()


ADD_KERNEL = """
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


class ModelNew(torch.nn.Module):
    def forward(self, x, y):
        {prepare}
        out = torch.empty_like(x)
        n = out.numel()
        add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
        return out
"""


@pytest.mark.slow
def test_a_group_task_is_evaluated_in_the_sandbox_on_its_groups(tmp_path) -> None:
    """End to end: the data file reaches the sandboxed children; a kernel that ignores broadcasting
    passes the first group ([3] + [3]) but not the others."""
    pytest.importorskip("torch")
    from ascend_kernel_gym.evaluation import EvalRequest, Evaluator

    task = get_task(str(ADD))
    broadcasting = ADD_KERNEL.replace("{prepare}", "x, y = [t.contiguous() for t in torch.broadcast_tensors(x, y)]")
    same_shape = ADD_KERNEL.replace("{prepare}", "pass")
    with Evaluator(backend="interpreter", workers=1, cache=False, tmp_root=str(tmp_path)) as evaluator:
        good, bad = evaluator.evaluate_many(
            [EvalRequest(task=task, code=broadcasting, seed=1), EvalRequest(task=task, code=same_shape, seed=1)]
        )
    assert good.ok, good.error_message
    assert not bad.ok and bad.error_type.value == "shape_mismatch"


def test_a_task_rebuilt_from_its_fields_after_use_is_equal() -> None:
    task = get_task(str(GELU))
    task.shape_cases("small")  # nothing computed on the way is stored on the task
    assert type(task)(**task.__dict__) == task
