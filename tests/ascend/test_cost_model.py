"""Cost model: counted bytes / FLOPs equal hand-computed values, sampling extrapolates exactly on
uniform grids, and the time formula matches a hand calculation."""

from __future__ import annotations

import importlib.util
import math
import sys
from dataclasses import replace

import pytest

from ascend_kernel_gym.ascend.chips import load_chip
from ascend_kernel_gym.ascend.cost_model import (
    KernelCounters,
    LaunchCounters,
    estimate,
    estimate_kernel,
    extrapolate,
    sample_program_ids,
)

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

    from ascend_kernel_gym.ascend.cost_model import instrument

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

    from ascend_kernel_gym.ascend.cost_model import instrument

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

    from ascend_kernel_gym.ascend.cost_model import instrument

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

    from ascend_kernel_gym.ascend.cost_model import instrument

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

    from ascend_kernel_gym.ascend.cost_model import _scalar, _to_int
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
            assert _to_int(value) == expected and type(_to_int(value)) is int, value
        assert _scalar(np.array([2.5], dtype=np.float32)) == 2.5
        assert type(_scalar(np.array([2.5]))) is float
        assert _scalar(np.array([True])) is True
        assert _scalar(3) == 3
        assert _to_int(np.float64(3.9)) == 3  # int() semantics: truncation

        class Handle:
            def __init__(self, data):
                self.data = data

        class Tensor:  # the interpreter's tl.tensor: a TensorHandle with a NumPy payload
            __index__ = _tensor_index

            def __init__(self, data):
                self.handle = Handle(data)

        assert list(range(0, Tensor(np.array([10], dtype=np.int32)), 4)) == [0, 4, 8]
        assert _to_int(Tensor(np.array([5]))) == 5
    with pytest.raises(TypeError, match="1-element"):
        _scalar(np.array([1, 2]))
    with pytest.raises(TypeError):
        _to_int(np.array([1, 2]))
    if _numpy_refuses_int_of_1d_arrays():  # the failure mode the helpers avoid
        with pytest.raises(TypeError, match="0-dimensional"):
            int(np.array([7]))


def test_instrument_survives_triton_36_tensor_index(kernels, monkeypatch: pytest.MonkeyPatch) -> None:
    """triton 3.6's interpreter sets ``tl.tensor.__index__ = lambda self: int(self.handle.data)``,
    which breaks every ``range(runtime_int)`` loop under NumPy >= 2.4; inside ``instrument()`` the
    kernel runs (and is counted exactly) anyway."""
    import torch
    from triton.runtime import interpreter

    from ascend_kernel_gym.ascend.cost_model import instrument

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

    from ascend_kernel_gym.ascend import cost_model

    def broken(mask, shape):
        raise ValueError("drifted interpreter internals")

    monkeypatch.setattr(cost_model, "_active_lanes", broken)
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


def _toy_chip():
    base = load_chip("910B3")
    return replace(
        base,
        name="toy",
        vector_cores=4,
        cube_cores=2,
        hbm_bandwidth_gbps=1000.0,  # 1e6 bytes / us, 250,000 bytes / us per core
        peak_dot_tflops=1.0,  # 1e6 flop / us
        peak_vector_tflops=1.0,
        dot_fp32_rate=0.5,
        launch_overhead_us=10.0,
        round_overhead_us=1.0,
        mem_latency_us=0.0,
        l2_bandwidth_gbps=None,
    )


def test_estimate_matches_the_hand_computed_formula() -> None:
    chip = _toy_chip()
    launch = LaunchCounters(
        kernel="k",
        grid=[8, 1, 1],
        programs=8,
        programs_run=8,
        arg_bytes=8_000_000,
        bytes_loaded=6e6,
        bytes_stored=2e6,
        memops=80,
    )
    result = estimate(KernelCounters([launch]), {"min_bytes": 8e6, "min_flops_16": 0.0}, chip)
    # 8 programs on 4 vector cores = 2 rounds of 4; each round moves 4e6 B at 1e6 B/us = 4 us.
    # est = 10 (launch) + 2 x 1 (rounds) + 2 x 4 = 20 us
    assert result["est_ms"] == pytest.approx(0.020)
    assert result["roofline_ms"] == pytest.approx(0.008)
    assert result["est_roofline_fraction"] == pytest.approx(0.4)
    assert result["label"] == "estimate" and result["chip"] == "toy" and result["rounds"] == 2
    assert result["bound"] == "overheads" and result["est_speedup"] is None  # 12 us of overheads > 8 us of work
    assert result["launches"][0]["bound"] == "overhead" and result["launches"][0]["mem_us"] == pytest.approx(8.0)
    assert any("assumption" in a for a in result["assumptions"])
    # 3 programs: one partial round on 3 of 4 cores: 3e6 B at 3 x 250,000 B/us = 4 us
    partial = replace(launch, programs=3, programs_run=3, bytes_loaded=2.25e6, bytes_stored=0.75e6, arg_bytes=3e6)
    assert estimate(KernelCounters([partial]), None, chip)["est_ms"] == pytest.approx((10 + 1 + 4) / 1e3)


def test_estimate_dot_bound_and_speedup() -> None:
    chip = replace(_toy_chip(), launch_overhead_us=1.0)
    # 2 programs on 2 cube cores, 2e6 fp16 FLOPs + 1e6 fp32 FLOPs (at half rate) = 4 us of dot work;
    # memory 2e5 B / (2 x 500,000 B/us) = 0.2 us
    launch = LaunchCounters(
        kernel="mm",
        grid=[2, 1, 1],
        programs=2,
        programs_run=2,
        arg_bytes=200_000,
        bytes_loaded=2e5,
        memops=2,
        dot_flops_16=2e6,
        dot_flops_32=1e6,
    )
    roof = {"min_bytes": 2e5, "min_flops_16": 2e6, "min_flops_32": 0.0, "ops": [["aten.mm", 2e5, 2e6, False]]}
    result = estimate(KernelCounters([launch]), roof, chip)
    assert result["est_ms"] == pytest.approx((1 + 1 + 4) / 1e3)
    assert result["bound"] == "dot"
    assert result["roofline_ms"] == pytest.approx(2e-3)
    # reference: one operator, 1 us launch + 1 us round + max(0.2 us, 2 us)
    assert result["reference_est_ms"] == pytest.approx(4e-3)
    assert result["est_speedup"] == pytest.approx(4 / 6)


def test_estimate_round_trips_counter_dicts() -> None:
    launch = LaunchCounters(kernel="k", grid=[4, 1, 1], programs=4, programs_run=2, bytes_loaded=1e6, memops=4)
    counters = KernelCounters([launch], max_programs=2)
    again = KernelCounters.from_dict(counters.to_dict())
    assert again.launches[0] == launch and again.launches[0].sampled
    assert estimate(again, chip="H200") == estimate(counters, chip="H200")
    with pytest.raises(TypeError):
        estimate([launch], chip="H200")  # type: ignore[arg-type]


def test_task_roofline_counts_matmul_flops_and_io_bytes() -> None:
    import torch

    from ascend_kernel_gym.ascend.cost_model import task_roofline

    class Model(torch.nn.Module):
        def forward(self, a, b):
            return torch.relu(a @ b)

    a, b = torch.randn(32, 48), torch.randn(48, 16)
    roof = task_roofline(Model(), [a, b], "toy/mm")
    assert roof["min_bytes"] == (32 * 48 + 48 * 16 + 32 * 16) * 4
    assert roof["min_flops_32"] == 2 * 32 * 48 * 16 and roof["min_flops_16"] == 0
    names = [op[0] for op in roof["ops"]]
    assert names == ["aten.mm", "aten.relu"]
    # mm reads a and b and writes its output; relu reads and writes the 32x16 result
    assert roof["ops"][0][1] == (32 * 48 + 48 * 16 + 32 * 16) * 4
    assert roof["ops"][1][1] == 2 * 32 * 16 * 4


def test_estimate_variants_run_in_a_separate_interpreter_process() -> None:
    from ascend_kernel_gym.ascend.cost_model import estimate_variants
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

    from ascend_kernel_gym.ascend.cost_model import estimate_in_process
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


def _bench_module():
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "bench" / "gpu_cost_model.py"
    spec = importlib.util.spec_from_file_location("akg_bench_gpu_cost_model", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_spearman_and_variants() -> None:
    bench = _bench_module()
    assert bench.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert bench.spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # ties get average ranks: x ranks (1, 2.5, 2.5, 4), y ranks (1, 3, 2, 4) -> 4.5 / sqrt(4.5 * 5)
    assert bench.spearman([1, 2, 2, 3], [1, 3, 2, 4]) == pytest.approx(4.5 / math.sqrt(22.5))
    assert bench.spearman([1, 1, 1], [1, 2, 3]) is None
    source = (
        "MAX_PROGRAMS = 4096\n"
        "@triton.jit\n"
        "def k(x, BLOCK: tl.constexpr = 256):\n"
        "    BLOCK_IN = 128\n"
        "class ModelNew:\n"
        "    def forward(self, x):\n"
        "        BLOCK_M, BLOCK_K = 64, 32\n"
        "        BLOCK_N = min(triton.next_power_of_2(n), 1024)\n"
    )
    variants = dict(bench.make_variants(source, 4))
    assert list(variants) == ["original", "blocks x0.5", "blocks x2", "programs /16"]
    assert "BLOCK_M, BLOCK_K = 32, 16" in variants["blocks x0.5"]
    assert "next_power_of_2(n), 512)" in variants["blocks x0.5"]
    assert "BLOCK_IN = 128" in variants["blocks x2"]  # kernel bodies are left alone
    assert "MAX_PROGRAMS = 256" in variants["programs /16"]


def test_bench_dry_run(tmp_path) -> None:
    import json
    import subprocess
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    out = tmp_path / "report.md"
    command = [
        sys.executable, str(repo / "bench" / "gpu_cost_model.py"), "--dry-run", "--tasks", "core/L1/relu",
        "--max-variants", "3", "--max-programs", "4", "--workers", "1", "--compile-workers", "1", "--out", str(out),
    ]  # fmt: skip
    proc = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=repo, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads(out.with_suffix(".json").read_text())
    rows = data["rows"]
    assert [r["variant"] for r in rows] == ["original", "blocks x0.5", "blocks x2"]
    assert all(r["correct"] and r["est_ms"] and r["measured_ms"] for r in rows), rows
    assert data["summary"]["per_task"]["core/L1/relu"]["n"] == 3
    text = out.read_text()
    assert "DRY RUN" in text and "core/L1/relu" in text and "Spearman" in text
