"""Counting interpreted kernels: counted bytes / FLOPs / element ops equal hand-computed values,
sampling extrapolates exactly on uniform grids, and a count that fails never breaks the kernel."""

from __future__ import annotations

import importlib.util
import math
import sys

import pytest

from ascend_kernel_gym.ascend.counters import KernelCounters, extrapolate, sample_program_ids
from ascend_kernel_gym.ascend.estimator import estimate

KERNELS = """
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for c0 in range(0, n_cols, BLOCK):
        cols = c0 + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        ks = k0 + rk
        a = tl.load(a_ptr + rm[:, None] * K + ks[None, :], mask=(rm[:, None] < M) & (ks[None, :] < K), other=0.0)
        b = tl.load(b_ptr + ks[:, None] * N + rn[None, :], mask=(ks[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def dot_ieee_kernel(a_ptr, b_ptr, c_ptr, B: tl.constexpr):
    r = tl.arange(0, B)
    a = tl.load(a_ptr + r[:, None] * B + r[None, :])
    b = tl.load(b_ptr + r[:, None] * B + r[None, :])
    c = tl.dot(a, b, input_precision="ieee")
    tl.store(c_ptr + r[:, None] * B + r[None, :], c)
"""


@pytest.fixture(scope="module")
def kernels(tmp_path_factory: pytest.TempPathFactory):
    """The kernels above, defined with Triton's interpreter on (set before the decorators run)."""
    mp = pytest.MonkeyPatch()
    mp.setenv("TRITON_INTERPRET", "1")
    import triton

    try:
        if not triton.knobs.runtime.interpret:
            pytest.skip("this triton reads TRITON_INTERPRET only at import; run in a fresh process")
    except AttributeError:
        pass
    path = tmp_path_factory.mktemp("cost_model") / "akg_cost_model_kernels.py"
    path.write_text(KERNELS)
    spec = importlib.util.spec_from_file_location("akg_cost_model_kernels", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)
    mp.undo()


def _run_add(kernels, n: int, block: int, max_programs: int | None = None):
    import torch
    import triton

    from ascend_kernel_gym.ascend.counters import instrument

    x, y = torch.randn(n), torch.randn(n)
    out = torch.empty(n)
    with instrument(max_programs) as counters:
        kernels.add_kernel[(triton.cdiv(n, block),)](x, y, out, n, BLOCK=block)
    return counters, x, y, out


def test_elementwise_counts_honour_the_masked_tail(kernels) -> None:
    import torch

    counters, x, y, out = _run_add(kernels, n=1000, block=128)
    assert torch.equal(out, x + y)  # no sampling: the kernel's output is complete
    (launch,) = counters.launches
    assert launch.kernel == "add_kernel"
    assert launch.programs == 8 and launch.programs_run == 8 and launch.grid == [8, 1, 1]
    # 8 programs x 128 lanes = 1024 lanes, only 1000 active: 2 loads and 1 store of 4 bytes each
    assert launch.bytes_loaded == 2 * 1000 * 4
    assert launch.bytes_stored == 1000 * 4
    assert launch.memops == 8 * 3
    assert launch.dot_flops == 0
    # x + y alone is 1024 element ops (the tail lanes are computed, masked only at the store)
    assert launch.vector_ops >= 1024
    assert launch.arg_bytes == 3 * 1000 * 4


def test_reduction_counts(kernels) -> None:
    import torch

    from ascend_kernel_gym.ascend.counters import instrument

    rows, cols, block = 5, 300, 128
    x = torch.randn(rows, cols)
    out = torch.empty(rows)
    with instrument() as counters:
        kernels.row_sum_kernel[(rows,)](x, out, cols, BLOCK=block)
    torch.testing.assert_close(out, x.sum(dim=1), rtol=1e-5, atol=1e-4)
    (launch,) = counters.launches
    assert launch.programs == rows
    assert launch.bytes_loaded == rows * cols * 4  # 3 column blocks, the last one 44 of 128 lanes
    assert launch.bytes_stored == rows * 4
    assert launch.memops == rows * (math.ceil(cols / block) + 1)
    # the reduction consumes one 128-lane tile per row
    assert launch.vector_ops >= rows * block


def test_matmul_counts(kernels) -> None:
    import torch
    import triton

    from ascend_kernel_gym.ascend.counters import instrument

    M, N, K, B = 40, 24, 50, 16
    a, b = torch.randn(M, K), torch.randn(K, N)
    c = torch.empty(M, N)
    grid = (triton.cdiv(M, B), triton.cdiv(N, B))
    with instrument() as counters:
        kernels.matmul_kernel[grid](a, b, c, M, N, K, BM=B, BN=B, BK=B)
    torch.testing.assert_close(c, a @ b, rtol=1e-4, atol=1e-4)
    (launch,) = counters.launches
    tiles = grid[0] * grid[1]  # 3 x 2
    k_steps = math.ceil(K / B)  # 4
    assert launch.programs == tiles
    # every dot is a full 16x16x16 tile (padding lanes are multiplied too): 2*16^3 FLOPs each
    assert launch.dot_flops_32 == tiles * k_steps * 2 * B**3
    assert launch.dot_flops_16 == 0
    # masked loads: each of the 2 column tiles reads all of A, each of the 3 row tiles all of B
    assert launch.bytes_loaded == grid[1] * M * K * 4 + grid[0] * K * N * 4
    assert launch.bytes_stored == M * N * 4
    # fp32 dots with input_precision="ieee" are counted apart (CUDA cores on a GPU)
    a16, b16, c16 = torch.randn(16, 16), torch.randn(16, 16), torch.empty(16, 16)
    with instrument() as counters:
        kernels.dot_ieee_kernel[(1,)](a16, b16, c16, B=16)
    (ieee,) = counters.launches
    assert ieee.dot_flops_ieee == 2 * 16**3 and ieee.dot_flops_32 == 0 and ieee.dot_flops_16 == 0


def test_sampling_is_exact_for_a_uniform_grid_with_a_tail(kernels) -> None:
    full, *_ = _run_add(kernels, n=128 * 100 + 50, block=128)
    sampled, *_ = _run_add(kernels, n=128 * 100 + 50, block=128, max_programs=8)
    f, s = full.launches[0], sampled.launches[0]
    assert s.programs == f.programs == 101 and s.programs_run == 8 and s.sampled and not f.sampled
    for name in ("bytes_loaded", "bytes_stored", "memops", "vector_ops", "dot_flops"):
        assert getattr(s, name) == pytest.approx(getattr(f, name), rel=1e-12), name
    assert estimate(sampled, chip="910B3")["est_ms"] == pytest.approx(estimate(full, chip="910B3")["est_ms"])


def test_instrument_restores_the_interpreter(kernels) -> None:
    from triton.runtime import interpreter

    from ascend_kernel_gym.ascend.counters import instrument

    before = {
        name: interpreter.InterpreterBuilder.__dict__.get(name)
        for name in ("create_masked_load", "create_masked_store", "create_dot", "binary_op", "set_grid_dim")
    }
    call = interpreter.GridExecutor.__call__
    lang_tensor = interpreter._patch_lang_tensor
    with pytest.raises(RuntimeError, match="nested"):
        with instrument():
            with instrument():
                pass
    for name, fn in before.items():
        assert interpreter.InterpreterBuilder.__dict__.get(name) is fn, name
    assert interpreter.GridExecutor.__call__ is call
    assert interpreter._patch_lang_tensor is lang_tensor
    # after the failed nesting the interpreter runs normally and a new block counts from zero
    import torch

    x = torch.randn(256)
    out = torch.empty(256)
    kernels.add_kernel[(2,)](x, x, out, 256, BLOCK=128)
    assert torch.equal(out, x + x)
    counters, *_ = _run_add(kernels, n=256, block=128)
    assert len(counters.launches) == 1 and counters.launches[0].bytes_stored == 256 * 4


def _language_is_interpreted() -> bool:
    """Whether triton.language's own @jit helpers run under the interpreter in this process.

    triton >= 3.9 fixes that when triton.language is first imported: after an earlier test
    imported triton without ``TRITON_INTERPRET``, a plain (unpatched) interpreter run cannot
    call ``tl.zeros`` at all, whatever the kernel does.
    """
    import triton.language as tl
    from triton.runtime.jit import JITFunction

    return not isinstance(tl.zeros, JITFunction)


def _numpy_refuses_int_of_1d_arrays() -> bool:
    import numpy as np

    try:
        int(np.array([3]))
    except TypeError:
        return True  # NumPy >= 2.4
    return False


def test_scalar_conversion_of_interpreter_values() -> None:
    """The interpreter keeps scalars as 1-element 1-D arrays; NumPy >= 2.4 refuses ``int()`` on them
    (triton 3.6's ``tl.tensor.__index__`` did exactly that): the helpers go through ``.item()``."""
    import warnings

    import numpy as np

    from ascend_kernel_gym.ascend.counters import to_int
    from ascend_kernel_gym.backends.interpreter_compat import scalar
    from ascend_kernel_gym.backends.interpreter_compat import tensor_index as _tensor_index

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no NumPy < 2.4 DeprecationWarning either
        for value, expected in [
            (7, 7),
            (np.int32(7), 7),
            (np.array(7), 7),
            (np.array([7], dtype=np.int32), 7),
            (np.array([[7]], dtype=np.uint64), 7),
            (np.array([2**40], dtype=np.int64), 2**40),
            (np.array([True]), 1),
        ]:
            assert to_int(value) == expected and type(to_int(value)) is int, value
        assert scalar(np.array([2.5], dtype=np.float32)) == 2.5
        assert type(scalar(np.array([2.5]))) is float
        assert scalar(np.array([True])) is True
        assert scalar(3) == 3
        assert to_int(np.float64(3.9)) == 3  # int() semantics: truncation

        class Handle:
            def __init__(self, data):
                self.data = data

        class Tensor:  # the interpreter's tl.tensor: a TensorHandle with a NumPy payload
            __index__ = _tensor_index

            def __init__(self, data):
                self.handle = Handle(data)

        assert list(range(0, Tensor(np.array([10], dtype=np.int32)), 4)) == [0, 4, 8]
        assert to_int(Tensor(np.array([5]))) == 5
    with pytest.raises(TypeError, match="1-element"):
        scalar(np.array([1, 2]))
    with pytest.raises(TypeError):
        to_int(np.array([1, 2]))
    if _numpy_refuses_int_of_1d_arrays():  # the failure mode the helpers avoid
        with pytest.raises(TypeError, match="0-dimensional"):
            int(np.array([7]))


def test_instrument_survives_triton_36_tensor_index(kernels, monkeypatch: pytest.MonkeyPatch) -> None:
    """triton 3.6's interpreter sets ``tl.tensor.__index__ = lambda self: int(self.handle.data)``,
    which breaks every ``range(runtime_int)`` loop under NumPy >= 2.4; inside ``instrument()`` the
    kernel runs (and is counted exactly) anyway."""
    import torch
    from triton.runtime import interpreter

    from ascend_kernel_gym.ascend.counters import instrument

    original = interpreter._patch_lang_tensor

    def triton_36_patch_lang_tensor(tensor, scope):
        original(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data))

    monkeypatch.setattr(interpreter, "_patch_lang_tensor", triton_36_patch_lang_tensor)
    rows, cols, block = 3, 300, 128
    x = torch.randn(rows, cols)
    out = torch.empty(rows)
    if _numpy_refuses_int_of_1d_arrays() and _language_is_interpreted():
        with pytest.raises(Exception, match="0-dimensional"):
            kernels.row_sum_kernel[(rows,)](x, out, cols, BLOCK=block)
    with instrument() as counters:
        kernels.row_sum_kernel[(rows,)](x, out, cols, BLOCK=block)
    torch.testing.assert_close(out, x.sum(dim=1), rtol=1e-5, atol=1e-4)
    (launch,) = counters.launches
    assert launch.bytes_loaded == rows * cols * 4 and launch.bytes_stored == rows * 4
    assert launch.memops == rows * (math.ceil(cols / block) + 1)
    assert launch.uncounted == 0
    assert interpreter._patch_lang_tensor is triton_36_patch_lang_tensor  # restored after the block


def test_a_failing_count_never_breaks_the_kernel(kernels, monkeypatch: pytest.MonkeyPatch) -> None:
    """A hook whose counting raises (interpreter internals drifted) leaves the kernel's run and
    outputs intact and is reported: ``uncounted`` on the launch, a lower-bound note in the estimate."""
    import torch

    from ascend_kernel_gym.ascend import counters as counting

    def broken(mask, shape):
        raise ValueError("drifted interpreter internals")

    monkeypatch.setattr(counting, "_active_lanes", broken)
    counters, x, y, out = _run_add(kernels, n=1000, block=128)
    assert torch.equal(out, x + y)
    (launch,) = counters.launches
    assert launch.programs == 8
    assert launch.uncounted == 8 * 3  # 2 loads + 1 store per program could not be counted
    assert launch.bytes_loaded == 0 and launch.bytes_stored == 0 and launch.memops == 0
    assert launch.vector_ops >= 1024  # the other hooks still count
    result = estimate(counters, chip="910B3")
    assert result["uncounted"] == 24
    assert any("lower bounds" in line for line in result["assumptions"])
    assert KernelCounters.from_dict(counters.to_dict()).launches[0].uncounted == 24


def test_sample_program_ids_and_extrapolate() -> None:
    assert sample_program_ids(10, None) is None
    assert sample_program_ids(10, 10) is None
    ids = sample_program_ids(1000, 5)
    assert ids == [0, 333, 665, 998, 999]  # 4 evenly spaced over [0, 998] plus the last
    with pytest.raises(ValueError):
        sample_program_ids(10, 1)
    # 4 programs sampled of 10, the last one different: others x (9 / 3) + last
    samples = [(0, [2.0] * 8), (3, [2.0] * 8), (6, [2.0] * 8), (9, [1.0] * 8)]
    assert extrapolate(samples, 10) == [2.0 * 9 + 1.0] * 8
    # work growing linearly with the program id (e.g. causal attention) is extrapolated almost exactly
    programs = 1000
    cost = [[5.0 + 0.5 * i] * 8 for i in range(programs)]
    ids = sample_program_ids(programs, 16)
    estimate_total = extrapolate([(i, cost[i]) for i in ids], programs)[0]
    assert estimate_total == pytest.approx(sum(c[0] for c in cost), rel=1e-3)
