"""The task model and loader (tasks/task.py): KernelBench compatibility, inferred metadata, profiles
(explicit and derived small ones, sizes written as expressions), file encodings, malformed files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ascend_kernel_gym.cli import main as akg
from ascend_kernel_gym.tasks import TaskLoadError, load_task_file, load_task_source
from ascend_kernel_gym.tasks.task import AUTO_SMALL_TAG, auto_small_profile, read_python_source

DATA = Path(__file__).parent.parent / "data" / "kernelbench"
SOFTMAX = DATA / "level1" / "23_Softmax.py"
GEMM = DATA / "level2" / "12_Gemm_Multiply_LeakyReLU.py"
HINGE = DATA / "level1" / "100_HingeLoss.py"
SQUARE_MATMUL = DATA / "level1" / "1_Square_matrix_multiplication_.py"

VALID = """
import torch
import torch.nn as nn

TASK = {"level": 2, "category": "test", "description": "d", "dtype": "float16",
        "profiles": {"small": {"N": 8}}}

N = 1024
M = 4


class Model(nn.Module):
    def forward(self, x):
        return x * 2


def get_inputs():
    return [torch.randn(N, M)]


def get_init_inputs():
    return []
"""


def test_plain_kernelbench_file_loads_with_inferred_metadata():
    task = load_task_file(SOFTMAX)
    assert task.id == "file/23_Softmax"
    assert task.level == 1  # from the "level1" directory
    assert task.category == "softmax"
    assert task.dtype == "float32"
    assert (task.atol, task.rtol) == (1e-4, 1e-4)
    # no small profile in the file: one is derived for the interpreter (16384 -> 64, 16 kept)
    assert task.profiles == {"full": {}, "small": {"dim": 64}}
    assert AUTO_SMALL_TAG in task.tags and task.default_profile("interpreter") == "small"
    assert task.default_profile("cuda") == "full"
    assert "Softmax" in task.description
    assert task.solution_path is None


def test_auto_small_profile_removes_power_of_two_factors_from_large_sizes():
    constants = {"a": 16384, "b": 1000, "c": 768, "d": 4095, "e": 100, "f": True, "g": 2.0, "h": 128, "i": "x"}
    assert auto_small_profile(constants) == {"a": 64, "b": 125, "c": 96, "h": 64}
    assert auto_small_profile({"n": 8, "eps": 1e-5}) == {}


def test_explicit_small_profile_is_never_replaced():
    task = load_task_source(VALID, task_id="t/valid")
    assert task.profiles["small"] == {"N": 8} and AUTO_SMALL_TAG not in task.tags


def test_kernelbench_level2_file_infers_level_and_category():
    task = load_task_file(GEMM)
    assert task.level == 2
    assert task.category == "matmul"


@pytest.mark.parametrize(
    ("spelling", "dtype"),
    [
        ("torch.randn(N, M).half()", "float16"),
        ("torch.randn(N, M, dtype=torch.half)", "float16"),
        ("torch.randn(N, M, dtype=torch.float16)", "float16"),
        ("torch.randn(N, M).bfloat16()", "bfloat16"),
        ("torch.randn(N, M, dtype=torch.bfloat16)", "bfloat16"),
        ("torch.randn(N, M)", "float32"),
    ],
)
def test_dtype_is_inferred_from_how_inputs_are_made(spelling, dtype):
    source = VALID.split("TASK = {")[0] + "N = 4\nM = 4\n" + VALID.split("M = 4\n", 1)[1]
    source = source.replace("torch.randn(N, M)", spelling)
    task = load_task_source(source, task_id="t/x")
    assert task.dtype == dtype
    assert task.atol == {"float32": 1e-4, "float16": 1e-2, "bfloat16": 2e-2}[dtype]


def test_metadata_and_profile_overrides():
    torch = pytest.importorskip("torch")
    from ascend_kernel_gym.tasks.runtime import instantiate

    task = load_task_source(VALID, task_id="t/x")
    assert task.level == 2 and task.dtype == "float16"
    assert (task.atol, task.rtol) == (1e-2, 1e-2)  # per-dtype defaults
    assert task.profiles == {"full": {}, "small": {"N": 8}}
    (x,) = instantiate(task, "small").get_inputs()
    assert x.shape == (8, 4)
    (y,) = instantiate(task, "full").get_inputs()
    assert y.shape == (1024, 4)
    assert isinstance(y, torch.Tensor)


def test_prompt_source_drops_task_block_and_applies_profile():
    task = load_task_source(VALID, task_id="t/x")
    text = task.prompt_source("small")
    assert "TASK" not in text
    assert "N = 8" in text and "N = 1024" not in text
    assert "M = 4" in text
    compile(text, "prompt", "exec")  # still valid Python
    with pytest.raises(KeyError, match="no profile 'tiny'"):
        task.prompt_source("tiny")


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        ("def f(:\n", "not valid Python"),
        (VALID.replace("class Model", "class Other"), "missing top-level class 'Model'"),
        (VALID.replace("def get_inputs", "def inputs"), "missing top-level function 'get_inputs'"),
        (VALID.replace("def get_init_inputs", "def init_inputs"), "'get_init_inputs'"),
        (VALID.replace("def forward", "def fwd"), "no forward()"),
        (VALID.replace('"level": 2', '"level": "two"'), "positive int"),
        (VALID.replace('"float16"', '"float8"'), "dtype"),
        (VALID.replace('"category"', '"categry"'), "unknown keys"),
        (VALID.replace('{"N": 8}', '{"K": 8}'), "not module-level constants"),
        (VALID.replace("TASK = {", "TASK = dict(**{").replace('{"N": 8}}}', '{"N": 8}}})'), "literal dict"),
    ],
)
def test_malformed_task_names_file_and_problem(tmp_path, source, problem):
    path = tmp_path / "bad_task.py"
    path.write_text(source)
    with pytest.raises(TaskLoadError) as excinfo:
        load_task_file(path)
    assert str(path) in str(excinfo.value)
    assert problem in str(excinfo.value)


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(TaskLoadError, match="no such task file"):
        load_task_file(tmp_path / "nope.py")


def test_import_does_not_import_torch_or_triton():
    code = (
        "import sys, ascend_kernel_gym, ascend_kernel_gym.tasks, ascend_kernel_gym.evaluation.result; "
        "print(sorted(m for m in ('torch', 'triton') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


RELU = '''import torch
import torch.nn as nn


class Model(nn.Module):
    """ReLU of a {label} file."""

    def forward(self, x):
        return torch.relu(x)


batch_size = 8
dim = 32
LABEL = "{label}"


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
'''

BOM = b"\xef\xbb\xbf"


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


# --- encodings -----------------------------------------------------------------------------------


def test_task_file_with_a_byte_order_mark_loads_like_the_plain_file(tmp_path, capsys) -> None:
    torch = pytest.importorskip("torch")
    from ascend_kernel_gym.tasks.runtime import instantiate

    text = RELU.format(label="plain")
    plain = load_task_file(_write(tmp_path, "relu_plain.py", text.encode()))
    # BOM and Windows line endings, as Notepad saves it
    bom = load_task_file(_write(tmp_path, "relu_bom.py", BOM + text.replace("\n", "\r\n").encode()))
    assert not bom.source.startswith("\ufeff") and "\r" not in bom.source
    assert bom.source == plain.source
    assert bom.description == plain.description == "ReLU of a plain file."
    tm = instantiate(bom)
    (x,) = tm.get_inputs()
    assert torch.equal(tm.Model()(x), torch.relu(x))
    assert akg(["tasks", "show", str(tmp_path / "relu_bom.py")]) == 0
    assert "ReLU of a plain file." in capsys.readouterr().out


def test_bom_in_source_text_is_dropped() -> None:
    task = load_task_source("\ufeff" + RELU.format(label="text"), task_id="t/bom")
    assert task.source == RELU.format(label="text")


def test_task_file_with_a_latin1_coding_line_is_decoded_as_declared(tmp_path) -> None:
    pytest.importorskip("torch")
    from ascend_kernel_gym.tasks.runtime import instantiate

    text = "# -*- coding: latin-1 -*-\n" + RELU.format(label="café")
    path = _write(tmp_path, "relu_latin1.py", text.encode("latin-1"))
    with pytest.raises(UnicodeDecodeError):
        path.read_bytes().decode("utf-8")  # really not UTF-8
    task = load_task_file(path)
    assert task.description == "ReLU of a café file."
    tm = instantiate(task)
    assert tm.module.LABEL == "café"  # the string the file means, not mojibake
    (x,) = tm.get_inputs()
    assert tuple(tm.Model()(x).shape) == (8, 32)


def test_non_utf8_file_without_a_coding_line_is_a_clear_error(tmp_path) -> None:
    path = _write(tmp_path, "relu_latin1_undeclared.py", RELU.format(label="café").encode("latin-1"))
    with pytest.raises(TaskLoadError) as excinfo:
        load_task_file(path)
    message = str(excinfo.value)
    assert str(path) in message and "utf-8" in message.lower() and "coding" in message
    assert akg(["tasks", "show", str(path)]) == 2


def test_read_python_source_matches_how_python_decodes(tmp_path) -> None:
    path = _write(tmp_path, "m.py", BOM + b"x = 1\r\ny = 'caf\xc3\xa9'\r\n")
    assert read_python_source(path) == "x = 1\ny = 'café'\n"
    path = _write(tmp_path, "n.py", b"# coding: cp1252\nz = '\x80'\n")
    assert read_python_source(path) == "# coding: cp1252\nz = '€'\n"


# --- sizes written as expressions and tuples -----------------------------------------------------

EXPRESSION_SIZES = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b, x):
        return a @ b, x[:, :half] * scale


batch_size = 4096 * 4  # batch
dim = 2 ** 12
M = 1024 * 2; K = 4096 * 2
N = 2048 * 2
half = dim // 2
scale = 1 / dim
eps = 1e-5
kernel = 3
offset = -(2 ** 8)
shape = (M, *(N,))
name = "mm"


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N), torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
"""


def test_sizes_written_as_expressions_get_a_consistent_small_profile() -> None:
    torch = pytest.importorskip("torch")
    from ascend_kernel_gym.tasks.runtime import instantiate

    task = load_task_source(EXPRESSION_SIZES, task_id="t/expr")
    small = task.profiles["small"]
    assert AUTO_SMALL_TAG in task.tags
    # literal arithmetic is evaluated and shrunk; constants computed from others are recomputed
    assert small == {
        "batch_size": 64,
        "dim": 64,
        "M": 64,
        "K": 64,
        "N": 64,
        "half": 32,
        "scale": 1 / 64,
        "shape": (64, 64),
    }
    text = task.prompt_source("small")
    assert "batch_size = 64  # batch" in text and "dim = 64" in text
    assert "M = 64; K = 64" in text and "N = 64" in text
    assert "half = dim // 2" in text and "scale = 1 / dim" in text  # still true at the small sizes
    assert "offset = -(2 ** 8)" in text and "eps = 1e-5" in text
    assert task.prompt_source("full") == EXPRESSION_SIZES

    tm = instantiate(task, "small")
    a, b, x = tm.get_inputs()
    assert (tuple(a.shape), tuple(b.shape), tuple(x.shape)) == ((64, 64), (64, 64), (64, 64))
    mm, y = tm.Model()(a, b, x)
    assert tuple(mm.shape) == (64, 64) and torch.allclose(y, x[:, :32] / 64)


def test_real_kernelbench_square_matmul_gets_a_small_profile() -> None:
    task = load_task_file(SQUARE_MATMUL)
    assert task.profiles == {"full": {}, "small": {"N": 64}}
    assert "N = 64" in task.prompt_source("small") and "N = 2048 * 2" in task.prompt_source("full")


def test_real_kernelbench_hinge_loss_tuple_shape_shrinks_with_the_batch() -> None:
    """L1 100_HingeLoss: predictions (batch_size, *input_shape) times targets (batch_size,) only
    broadcast while input_shape[-1] == batch_size, which the small profile must keep."""
    torch = pytest.importorskip("torch")
    from ascend_kernel_gym.tasks.runtime import instantiate

    task = load_task_file(HINGE)
    assert task.profiles == {"full": {}, "small": {"batch_size": 64, "input_shape": (64,)}}
    assert task.default_profile("interpreter") == "small"
    text = task.prompt_source("small")
    assert "batch_size = 64" in text and "input_shape = (64,)" in text and "dim = 1" in text

    tm = instantiate(task, "small")
    predictions, targets = tm.get_inputs()
    assert tuple(predictions.shape) == (64, 64) and tuple(targets.shape) == (64,)
    model = tm.Model(*tm.get_init_inputs())
    out = model(predictions, targets)  # the reference runs on the small inputs
    assert out.shape == () and torch.isfinite(out)
    assert torch.allclose(out, torch.clamp(1 - predictions * targets, min=0).mean())


def test_explicit_profile_recomputes_constants_computed_from_the_sizes_it_sets() -> None:
    pytest.importorskip("torch")
    from ascend_kernel_gym.tasks.runtime import instantiate

    source = EXPRESSION_SIZES.replace(
        "import torch.nn as nn\n", 'import torch.nn as nn\n\nTASK = {"profiles": {"small": {"dim": 16}}}\n', 1
    )
    task = load_task_source(source, task_id="t/explicit")
    assert task.profiles["small"] == {"dim": 16, "half": 8, "scale": 1 / 16} and AUTO_SMALL_TAG not in task.tags
    tm = instantiate(task, "small")
    assert (tm.module.dim, tm.module.half) == (16, 8)
    assert "TASK" not in task.prompt_source("small")


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("N = 2 ** 100000", {}),  # too large to evaluate: not a constant, never shrunk
        ("N = 10 ** 3 // 0", {}),
        ("N = len([1] * 4096)", {}),  # calls are never evaluated
        ("N = 4096\nN *= 2", {}),  # rebound by something else: no longer a known constant
        ("N = 4096\nfor N in range(3):\n    pass", {}),
        ('N = 4096\nif __name__ == "__main__":\n    N = 8', {"N": 64}),  # the main block never runs
        ("N = 256\nN = N * 2", {"N": 128}),  # reassigned from itself: recomputed
        ("N = (2048, [512, 8])", {"N": (64, [64, 8])}),
    ],
)
def test_constant_evaluation_is_safe_and_conservative(line, expected) -> None:
    source = f"import torch\n\n{line}\n\nclass Model:\n    def forward(self, x):\n        return x\n\n"
    source += "def get_inputs():\n    return [torch.randn(4)]\n\ndef get_init_inputs():\n    return []\n"
    task = load_task_source(source, task_id="t/c")
    assert task.profiles.get("small", {}) == expected


# --- get_inputs() must return a list -------------------------------------------------------------

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


@pytest.mark.parametrize(
    ("body", "what"),
    [
        ("return torch.randn(4, 32)", "a tensor"),
        ("x = torch.randn(4, 32).cuda()\n    return x", "a tensor"),
        ("return {'x': torch.randn(4)}", "a dict"),
        ("pass", "None"),
    ],
)
def test_get_inputs_returning_a_bare_value_is_a_task_error(tmp_path, capsys, body, what) -> None:
    path = tmp_path / "bare.py"
    path.write_text(BARE_TENSOR.format(body=body))
    with pytest.raises(TaskLoadError) as excinfo:
        load_task_file(path)
    message = str(excinfo.value)
    assert str(path) in message and "get_inputs() must return a list of inputs" in message and what in message
    assert akg(["tasks", "show", str(path)]) == 2
    assert "get_inputs() must return a list" in capsys.readouterr().err
