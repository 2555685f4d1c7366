"""How exceptions raised while candidate code runs are classified (evaluation/errors.py)."""

from __future__ import annotations

import os

import pytest

from ascend_kernel_gym.evaluation import ErrorType
from ascend_kernel_gym.evaluation.errors import classify_exception


def _raised_in(filename: str, function: str, exc: BaseException) -> BaseException:
    """``exc`` as raised by a function named ``function`` defined in ``filename``."""
    namespace: dict = {}
    exec(compile(f"def {function}(exc):\n    raise exc\n", filename, "exec"), namespace)
    try:
        namespace[function](exc)
    except BaseException as raised:
        return raised
    raise AssertionError("not raised")


@pytest.mark.parametrize(
    "message",
    [
        "CUDA error: an illegal memory access was encountered",
        "CUDA error: misaligned address",
        "CUDA error: unspecified launch failure",
        "Memory access fault by GPU node-1 on address 0x7f00. Reason: Page not present.",
    ],
)
def test_device_memory_faults_are_crashes(message: str) -> None:
    assert classify_exception(RuntimeError(message)) == ErrorType.CRASH
    wrapped = RuntimeError("while launching")
    wrapped.__cause__ = RuntimeError(message)
    assert classify_exception(wrapped) == ErrorType.CRASH


def test_errors_of_tritons_source_analysis_are_compile_errors() -> None:
    jit_file = os.path.join(os.sep, "site-packages", "triton", "runtime", "jit.py")

    def unsupported() -> RuntimeError:
        return RuntimeError("Unsupported function referenced: <function helper at 0x7f>")

    assert classify_exception(_raised_in(jit_file, "visit_Name", unsupported())) == ErrorType.COMPILE_ERROR
    # The same text raised while launching (not analysing the source) stays a runtime error.
    assert classify_exception(_raised_in(jit_file, "run", unsupported())) == ErrorType.RUNTIME_ERROR
    assert classify_exception(_raised_in("/work/kernel.py", "visit_Name", unsupported())) == ErrorType.RUNTIME_ERROR


def test_memory_and_plain_errors() -> None:
    assert classify_exception(MemoryError()) == ErrorType.OOM
    assert classify_exception(RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")) == ErrorType.OOM
    assert classify_exception(ValueError("shapes do not match")) == ErrorType.RUNTIME_ERROR


def test_compile_error_points_at_candidate_line(tmp_path) -> None:
    """Triton's CompilationError gives 'at L:C' relative to the kernel's def line."""
    import ast

    from ascend_kernel_gym.evaluation.errors import compile_error_line, describe_exception

    code = "import triton\n\n\n@triton.jit\ndef my_kernel(x_ptr):\n    a = 1\n    b = tl.bad(a)\n"
    path = tmp_path / "kernel.py"
    path.write_text(code)

    class FakeCompilationError(Exception):
        def __init__(self) -> None:
            self.src = "def my_kernel(x_ptr):\n    a = 1\n    b = tl.bad(a)\n"
            self.node = ast.parse("b = tl.bad(a)").body[0]
            self.node.lineno = 3
            super().__init__("at 3:8:\nunknown function tl.bad")

    err = FakeCompilationError()
    assert compile_error_line(err, str(path)) == (
        "your code line 7 (in my_kernel, the Triton compiler's error): b = tl.bad(a)"
    )
    assert "your code line 7" in describe_exception(err, str(path))
    assert compile_error_line(ValueError("x"), str(path)) is None
