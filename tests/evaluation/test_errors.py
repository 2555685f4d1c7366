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
    # a failed allocation reported through NVML where NVML cannot start (seen on an H100)
    nvml = RuntimeError(
        'NVML_SUCCESS == DriverAPI::get()->nvmlInit_v2_() INTERNAL ASSERT FAILED at "/pytorch/c10/cuda/'
        'CUDACachingAllocator.cpp":1135, please report a bug to PyTorch. '
    )
    assert classify_exception(nvml) == ErrorType.OOM
    assert classify_exception(RuntimeError("INTERNAL ASSERT FAILED at aten/src/Foo.cpp")) == ErrorType.RUNTIME_ERROR


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


# --- the interpreter's memory check (issue 21, point 3) ---------------------------------------------


def _violation(kind: str, offset: int = 4096):
    memcheck = pytest.importorskip("ascend_kernel_gym.backends.interpreter_memcheck")
    return memcheck.OutOfBoundsAccess("relu_kernel", kind, "out_ptr", offset, 3, 0x7F0000, (0, 4096))


class InterpreterError(Exception):
    """Stands for Triton's wrapper of kernel errors (matched by name, as the real one is)."""


def _wrapped(violation: BaseException, filename: str) -> BaseException:
    """``violation`` raised in a kernel of ``filename``, wrapped the way the interpreter wraps it."""
    inner = _raised_in(filename, "relu_kernel", violation)
    try:
        raise InterpreterError("error in kernel") from inner
    except InterpreterError as outer:
        return outer


def test_out_of_bounds_accesses_become_their_own_error_type(tmp_path) -> None:
    from ascend_kernel_gym.evaluation.errors import candidate_failure

    candidate = str(tmp_path / "kernel.py")
    read = candidate_failure(_wrapped(_violation("read"), candidate), "ModelNew.forward failed: ", candidate)
    assert read.error_type == ErrorType.OUT_OF_BOUNDS and not read.hack
    lines = read.message.splitlines()
    assert lines[0].startswith("ModelNew.forward failed: kernel 'relu_kernel': out-of-bounds read (3 addresses")
    assert "byte offset 4096 from argument 'out_ptr'" in lines[0]
    assert lines[1].startswith("your code line 2 (in relu_kernel)")
    for kind in ("write", "atomic"):
        wrote = candidate_failure(_wrapped(_violation(kind), candidate), "", candidate)
        assert wrote.error_type == ErrorType.OUT_OF_BOUNDS and wrote.hack, kind
    assert classify_exception(_wrapped(_violation("read"), candidate)) == ErrorType.OUT_OF_BOUNDS
    # Anything else is classified as before; a look-alike class is not the memory check's.
    other = candidate_failure(ValueError("bad shape"), "ModelNew(...) failed: ", candidate)
    assert other.error_type == ErrorType.RUNTIME_ERROR and not other.hack
    assert other.message == "ModelNew(...) failed: ValueError: bad shape"

    class OutOfBoundsAccess(Exception):
        writes = True

    assert classify_exception(OutOfBoundsAccess("fake")) == ErrorType.RUNTIME_ERROR


def test_recorded_out_of_bounds_outranks_later_failures(monkeypatch) -> None:
    memcheck = pytest.importorskip("ascend_kernel_gym.backends.interpreter_memcheck")
    from ascend_kernel_gym.evaluation.errors import CAUGHT_NOTE, StageError, recorded_out_of_bounds

    def record(*violations) -> None:
        snapshot = memcheck.MemcheckState(True, 1, 1, tuple(violations), 0)
        monkeypatch.setattr(memcheck, "state", lambda: snapshot)

    record()
    assert recorded_out_of_bounds() is None
    assert recorded_out_of_bounds(StageError(ErrorType.VALUE_MISMATCH, "wrong")) is None

    read, write = _violation("read", 8), _violation("write", 16)
    record(read, write)
    caught = recorded_out_of_bounds()
    assert caught is not None and caught.error_type == ErrorType.OUT_OF_BOUNDS and caught.hack
    assert "out-of-bounds write" in caught.message and caught.message.endswith(CAUGHT_NOTE)
    # a later failure of another kind gives way to the recorded attempt, the write preferred
    replaced = recorded_out_of_bounds(StageError(ErrorType.VALUE_MISMATCH, "wrong"))
    assert replaced is not None and replaced.hack and "byte offset 16" in replaced.message
    # the uncaught read itself, or a failure that is already a hack, stays
    record(read)
    assert recorded_out_of_bounds(StageError(ErrorType.OUT_OF_BOUNDS, "read")) is None
    caught_read = recorded_out_of_bounds(StageError(ErrorType.RUNTIME_ERROR, "boom"))
    assert caught_read is not None and not caught_read.hack and "out-of-bounds read" in caught_read.message
    record(write)
    assert recorded_out_of_bounds(StageError(ErrorType.TORCH_FALLBACK, "aten.relu")) is None
    assert recorded_out_of_bounds(StageError(ErrorType.OUT_OF_BOUNDS, "write", hack=True)) is None
    upgraded = recorded_out_of_bounds(StageError(ErrorType.OUT_OF_BOUNDS, "read"))
    assert upgraded is not None and upgraded.hack
