"""The memory-safe interpreter: honest kernels run unchanged, stray accesses are stopped before they act.

Attacks aim at memory the test owns (another tensor, a private ``bytes`` object), so that a
regression shows up as a changed victim rather than a crashed test process; the wild addresses
(far past a tensor, NULL) run in a child process.
"""

from __future__ import annotations

import importlib.util
import json
import pickle
import subprocess
import sys

import pytest

np = pytest.importorskip("numpy")
torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from ascend_kernel_gym.backends import interpreter_memcheck as memcheck  # noqa: E402
from ascend_kernel_gym.backends.interpreter_memcheck import (  # noqa: E402
    ATOMIC,
    NO_ARGUMENT,
    NO_LAUNCH,
    READ,
    WRITE,
    AllowedRanges,
    OutOfBoundsAccess,
    StorageSpan,
)

# Only builtins inside the kernels: triton.language's own jitted helpers (tl.zeros, tl.sum, ...)
# are interpreted only when TRITON_INTERPRET was set before triton was first imported.
KERNELS = r"""
import triton
import triton.language as tl

HOOK = None


@triton.jit
def add_kernel(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)


@triton.jit
def pair_add(pair, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out + offs, tl.load(pair[0] + offs, mask=m) + tl.load(pair[1] + offs, mask=m), mask=m)


@triton.jit
def copy2d(src, dst, M, N, s_m, s_n, d_m, d_n, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    m = (rm[:, None] < M) & (rn[None, :] < N)
    tile = tl.load(src + rm[:, None] * s_m + rn[None, :] * s_n, mask=m, other=0.0)
    tl.store(dst + rm[:, None] * d_m + rn[None, :] * d_n, tile * 2.0, mask=m)


@triton.jit
def matmul(a, b, c, M, N, K, s_am, s_ak, s_bk, s_bn, s_cm, s_cn,
           BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.full((BM, BN), 0.0, tl.float32)
    for k0 in range(0, K, BK):
        ks = k0 + rk
        av = tl.load(a + rm[:, None] * s_am + ks[None, :] * s_ak, mask=(rm[:, None] < M) & (ks[None, :] < K), other=0.0)
        bv = tl.load(b + ks[:, None] * s_bk + rn[None, :] * s_bn, mask=(ks[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(av, bv, acc, input_precision="ieee")
    tl.store(c + rm[:, None] * s_cm + rn[None, :] * s_cn, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def desc_copy(src_desc, dst_desc, BM: tl.constexpr, BN: tl.constexpr):
    m0 = tl.program_id(0) * BM
    n0 = tl.program_id(1) * BN
    dst_desc.store([m0, n0], src_desc.load([m0, n0]) + 1.0)


@triton.jit
def device_desc_copy(src, dst, N, SRC_ROWS, DST_ROWS, DST_STRIDE, BM: tl.constexpr, BN: tl.constexpr):
    src_desc = tl.make_tensor_descriptor(src, shape=[SRC_ROWS, N], strides=[N, 1], block_shape=[BM, BN])
    dst_desc = tl.make_tensor_descriptor(dst, shape=[DST_ROWS, N], strides=[DST_STRIDE, 1], block_shape=[BM, BN])
    m0 = tl.program_id(0) * BM
    n0 = tl.program_id(1) * BN
    dst_desc.store([m0, n0], src_desc.load([m0, n0]) + 1.0)


@triton.jit
def block_ptr_copy(src, dst, M, N, BM: tl.constexpr, BN: tl.constexpr, CHECK: tl.constexpr):
    m0 = tl.program_id(0) * BM
    s = tl.make_block_ptr(src, shape=(M, N), strides=(N, 1), offsets=(m0, 0), block_shape=(BM, BN), order=(1, 0))
    d = tl.make_block_ptr(dst, shape=(M, N), strides=(N, 1), offsets=(m0, 0), block_shape=(BM, BN), order=(1, 0))
    if CHECK:
        tl.store(d, tl.load(s, boundary_check=(0, 1)), boundary_check=(0, 1))
    else:
        tl.store(d, tl.load(s))


@triton.jit
def histogram(idx, counts, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    bins = tl.load(idx + offs, mask=m, other=0)
    tl.atomic_add(counts + bins, 1, mask=m)


@triton.jit
def claim(flags, old_out, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    old = tl.atomic_cas(flags + offs, tl.full((BLOCK,), 0, tl.int32), tl.full((BLOCK,), 7, tl.int32))
    tl.store(old_out + offs, old)


@triton.jit
def shifted_load(x, out, SHIFT: tl.constexpr, MASKED: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    if MASKED:
        v = tl.load(x + offs + SHIFT, mask=offs + SHIFT < BLOCK, other=0.0)
    else:
        v = tl.load(x + offs + SHIFT)
    tl.store(out + offs, v)


@triton.jit
def scalar_load(x, out, IDX: tl.constexpr):
    tl.store(out, tl.load(x + IDX))


@triton.jit
def far_store(out, delta, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out + delta + offs, tl.full((BLOCK,), -5.0, tl.float32))


@triton.jit
def far_atomic(out, delta, CAS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    if CAS:
        tl.atomic_cas(out + delta + offs, tl.full((BLOCK,), 1.0, tl.float32), tl.full((BLOCK,), -5.0, tl.float32))
    else:
        tl.atomic_add(out + delta + offs, tl.full((BLOCK,), 100.0, tl.float32))


@triton.jit
def load_from_int(addr, out, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    p = addr.to(tl.pointer_type(tl.float32))
    tl.store(out + offs, tl.load(p + offs))


@triton.jit
def store_to_int(addr, dummy, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    p = addr.to(tl.pointer_type(tl.uint8))
    tl.store(p + offs, tl.full((BLOCK,), 0, tl.uint8))


@triton.jit
def resize_then_load(x, out, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    HOOK()
    tl.store(out + offs, tl.load(x + offs))


@triton.jit
def native_by_name(out, ADDR: tl.constexpr):
    _interpreter.store(np.array([ADDR], dtype=np.uint64), np.zeros(1, dtype=np.uint8), np.array([True]))


@triton.jit
def uses_interpreter_numpy(out, BLOCK: tl.constexpr):
    base = np.zeros(8, dtype=np.uint8)  # stock Triton copies its NumPy into this module's globals
    tl.store(out + tl.arange(0, BLOCK), tl.full((BLOCK,), 1.0, tl.float32))
"""


@pytest.fixture(scope="module")
def kernels(tmp_path_factory: pytest.TempPathFactory):
    """The kernels above, defined with the interpreter on, and the check installed."""
    mp = pytest.MonkeyPatch()
    mp.setenv("TRITON_INTERPRET", "1")
    import triton

    try:
        if not triton.knobs.runtime.interpret:
            pytest.skip("this triton reads TRITON_INTERPRET only at import; run in a fresh process")
    except AttributeError:
        pass
    from ascend_kernel_gym.backends import interpreter_compat

    interpreter_compat.install()
    was_installed = memcheck.is_installed()
    assert memcheck.install() and memcheck.install()  # idempotent
    path = tmp_path_factory.mktemp("memcheck") / "akg_memcheck_kernels.py"
    path.write_text(KERNELS)
    spec = importlib.util.spec_from_file_location("akg_memcheck_kernels", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)
    if not was_installed:
        memcheck.uninstall()
    mp.undo()


@pytest.fixture(autouse=True)
def _fresh_record():
    memcheck.reset()
    yield


def _clean() -> None:
    """The check ran and saw nothing wrong."""
    seen = memcheck.state()
    assert seen.installed and seen.launches >= 1 and seen.checks >= 1
    assert seen.violations == () and seen.dropped == 0


def _stopped(run) -> OutOfBoundsAccess:
    """Runs a launch that must be refused; returns the check's error (also found in the record)."""
    with pytest.raises(Exception) as info:
        run()
    error = memcheck.find_out_of_bounds(info.value)
    assert error is not None, f"not an out-of-bounds refusal: {info.value!r}"
    assert memcheck.state().violations[-1] is error
    return error


# --- honest kernels --------------------------------------------------------------------------


def test_elementwise_with_masked_tail_runs_unchanged(kernels) -> None:
    n = 1000
    x, y, out = torch.randn(n), torch.randn(n), torch.empty(n)
    kernels.add_kernel[(8,)](x, y, out, n, BLOCK=128)  # the last block has 24 masked-off lanes
    assert torch.equal(out, x + y)
    _clean()
    assert memcheck.state().checks == 8 * 3


def test_tuple_of_tensors_is_allowed(kernels) -> None:
    n = 300
    x, y, out = torch.randn(n), torch.randn(n), torch.empty(n)
    kernels.pair_add[(3,)]((x, y), out, n, BLOCK=128)
    assert torch.equal(out, x + y)
    _clean()


@pytest.mark.parametrize("transposed", [False, True])
def test_strided_views_of_a_larger_storage_and_an_output_at_an_offset(kernels, transposed: bool) -> None:
    big = torch.randn(40, 50)
    src = big[3:20, 5:35]  # 17 x 30 view inside a larger storage
    if transposed:
        src = big[5:35, 3:20].t()
    buf = torch.zeros(30, 40)
    dst = buf[4:21, 7:37]  # the output is a view at an offset of its storage
    m, n = src.shape
    grid = (triton_cdiv(m, 8), triton_cdiv(n, 16))
    kernels.copy2d[grid](src, dst, m, n, src.stride(0), src.stride(1), dst.stride(0), dst.stride(1), BM=8, BN=16)
    assert torch.equal(dst, src * 2.0)
    untouched = buf.clone()
    untouched[4:21, 7:37] = 0
    assert torch.count_nonzero(untouched) == 0  # nothing written outside the view
    _clean()


def test_dot_matmul_on_a_transposed_view(kernels) -> None:
    a = torch.randn(30, 40)[:24, :20].t()  # 20 x 24, column-major inside a larger storage
    b = torch.randn(24, 18)
    c_buf = torch.zeros(25, 21)
    c = c_buf[2:22, 1:19]
    m, k = a.shape
    n = b.shape[1]
    kernels.matmul[(triton_cdiv(m, 16), triton_cdiv(n, 16))](
        a, b, c, m, n, k, *a.stride(), *b.stride(), *c.stride(), BM=16, BN=16, BK=16
    )
    torch.testing.assert_close(c, a @ b, atol=1e-4, rtol=1e-4)
    _clean()


def test_host_tensor_descriptors_with_boundary_padding(kernels) -> None:
    descriptor = pytest.importorskip("triton.tools.tensor_descriptor").TensorDescriptor
    src, dst = torch.randn(13, 20), torch.zeros(13, 20)
    grid = (triton_cdiv(13, 8), triton_cdiv(20, 8))  # the last blocks hang over both edges
    kernels.desc_copy[grid](descriptor.from_tensor(src, [8, 8]), descriptor.from_tensor(dst, [8, 8]), BM=8, BN=8)
    assert torch.equal(dst, src + 1.0)
    _clean()


def test_device_tensor_descriptors_with_honest_shapes(kernels) -> None:
    src, dst = torch.randn(13, 20), torch.zeros(13, 20)
    grid = (triton_cdiv(13, 8), triton_cdiv(20, 8))
    kernels.device_desc_copy[grid](src, dst, 20, 13, 13, 20, BM=8, BN=8)
    assert torch.equal(dst, src + 1.0)
    _clean()


def test_block_pointers_with_boundary_check(kernels) -> None:
    src, dst = torch.randn(13, 16), torch.zeros(13, 16)
    try:
        kernels.block_ptr_copy[(2,)](src, dst, 13, 16, BM=8, BN=16, CHECK=True)
    except Exception as exc:
        if "Block pointers have been removed" in repr(exc):
            pytest.skip("this triton has no block pointers (tensor descriptors are tested instead)")
        raise
    assert torch.equal(dst, src)
    _clean()


def test_atomics_inside_their_tensors(kernels) -> None:
    idx = torch.randint(0, 10, (500,), dtype=torch.int32)
    counts = torch.zeros(10, dtype=torch.int32)
    kernels.histogram[(4,)](idx, counts, 500, BLOCK=128)
    assert torch.equal(counts, torch.bincount(idx, minlength=10).to(torch.int32))
    flags = torch.tensor([0, 3, 0, 5], dtype=torch.int32)
    old = torch.empty(4, dtype=torch.int32)
    kernels.claim[(1,)](flags, old, BLOCK=4)
    assert old.tolist() == [0, 3, 0, 5] and flags.tolist() == [7, 3, 7, 5]
    _clean()


def test_masked_shift_and_scalar_pointer_stay_inside(kernels) -> None:
    x, out = torch.randn(64), torch.zeros(64)
    kernels.shifted_load[(1,)](x, out, SHIFT=1, MASKED=True, BLOCK=64)
    assert torch.equal(out[:63], x[1:]) and out[63] == 0
    one = torch.zeros(1)
    kernels.scalar_load[(1,)](x, one, IDX=63)
    assert one.item() == x[63].item()
    _clean()


# --- attacks -----------------------------------------------------------------------------------


def test_store_at_a_huge_offset_is_stopped_before_it_writes(kernels) -> None:
    out, victim = torch.zeros(16), torch.ones(4096)
    delta = (victim.data_ptr() - out.data_ptr()) // 4 + 1024  # lands in the middle of the victim
    error = _stopped(lambda: kernels.far_store[(1,)](out, delta, BLOCK=16))
    assert torch.equal(victim, torch.ones(4096)) and torch.equal(out, torch.zeros(16))
    assert (error.kernel, error.kind, error.argument, error.count) == ("far_store", WRITE, "out", 16)
    assert error.offset == delta * 4 and error.window == (0, 64) and error.writes
    assert "far_store" in str(error) and "write" in str(error) and str(delta * 4) in str(error)


def test_unmasked_tail_read_one_element_past_the_end(kernels) -> None:
    x, out = torch.randn(64), torch.zeros(64)
    if out.data_ptr() == x.data_ptr() + 256:  # pragma: no cover - adjacent storages are both allowed
        pytest.skip("the allocator placed out right after x")
    error = _stopped(lambda: kernels.shifted_load[(1,)](x, out, SHIFT=1, MASKED=False, BLOCK=64))
    assert (error.kernel, error.kind, error.argument, error.count, error.offset) == ("shifted_load", READ, "x", 1, 256)
    assert not error.writes
    assert torch.equal(out, torch.zeros(64))  # the store after the refused load never ran


def test_scalar_pointer_load_past_the_end(kernels) -> None:
    x, out = torch.randn(8), torch.zeros(1)
    error = _stopped(lambda: kernels.scalar_load[(1,)](x, out, IDX=8))
    assert (error.kind, error.argument, error.offset, error.count) == (READ, "x", 32, 1)


def test_load_through_an_int_argument_holding_another_tensors_data_ptr(kernels) -> None:
    secret, out = torch.full((16,), 42.0), torch.zeros(16)
    error = _stopped(lambda: kernels.load_from_int[(1,)](secret.data_ptr(), out, BLOCK=16))
    assert (error.kernel, error.kind, error.argument, error.count) == ("load_from_int", READ, "out", 16)
    assert error.offset == secret.data_ptr() - out.data_ptr()
    assert torch.equal(out, torch.zeros(16))


def test_store_to_the_address_of_a_python_object_leaves_it_untouched(kernels) -> None:
    victim = bytes(range(1, 65))
    header = sys.getsizeof(b"") - 1  # where a bytes object's payload starts
    dummy = torch.zeros(4)
    error = _stopped(lambda: kernels.store_to_int[(1,)](id(victim) + header, dummy, BLOCK=16))
    assert victim == bytes(range(1, 65))
    assert (error.kernel, error.kind, error.argument, error.count) == ("store_to_int", WRITE, "dummy", 16)


@pytest.mark.parametrize("cas", [False, True])
def test_atomic_outside_is_stopped(kernels, cas: bool) -> None:
    out, victim = torch.zeros(8), torch.ones(256)
    delta = (victim.data_ptr() - out.data_ptr()) // 4 + 64
    error = _stopped(lambda: kernels.far_atomic[(1,)](out, delta, CAS=cas, BLOCK=8))
    assert torch.equal(victim, torch.ones(256))
    assert (error.kernel, error.kind, error.argument, error.offset) == ("far_atomic", ATOMIC, "out", delta * 4)
    assert error.writes


def test_device_descriptor_reading_past_its_tensor(kernels) -> None:
    src, dst = torch.randn(16, 20), torch.zeros(64, 20)
    error = _stopped(lambda: kernels.device_desc_copy[(8, 3)](src, dst, 20, 64, 64, 20, BM=8, BN=8))
    assert (error.kernel, error.kind, error.argument) == ("device_desc_copy", READ, "src")
    assert error.offset >= 16 * 20 * 4  # past the end of src
    assert torch.count_nonzero(dst[16:]) == 0


def test_device_descriptor_whose_stride_lands_its_second_row_in_another_tensor(kernels) -> None:
    src, dst, victim = torch.randn(2, 8), torch.zeros(1, 8), torch.ones(64)
    stride = (victim.data_ptr() - dst.data_ptr()) // 4  # both 64-byte aligned: a 16-byte aligned stride
    error = _stopped(lambda: kernels.device_desc_copy[(1, 1)](src, dst, 8, 2, 2, stride, BM=8, BN=8))
    assert torch.equal(victim, torch.ones(64)) and torch.equal(dst, torch.zeros(1, 8))
    assert (error.kernel, error.kind, error.count) == ("device_desc_copy", WRITE, 8)
    named = {"src": src, "dst": dst}[error.argument]  # the nearest storage, whichever pointer was used
    assert error.offset == victim.data_ptr() - named.data_ptr()


def test_host_descriptor_with_a_lying_shape(kernels) -> None:
    descriptor = pytest.importorskip("triton.tools.tensor_descriptor").TensorDescriptor
    src, dst = torch.randn(16, 20), torch.zeros(64, 20)
    lying = descriptor(src, shape=[64, 20], strides=[20, 1], block_shape=[8, 8])
    error = _stopped(lambda: kernels.desc_copy[(8, 3)](lying, descriptor.from_tensor(dst, [8, 8]), BM=8, BN=8))
    assert (error.kind, error.argument) == (READ, "src_desc.base")
    assert error.window == (0, 16 * 20 * 4) and error.offset >= 16 * 20 * 4


def test_block_pointer_without_boundary_check(kernels) -> None:
    src, dst = torch.randn(13, 16), torch.zeros(13, 16)
    try:
        run = kernels.block_ptr_copy[(2,)]
        error = _stopped(lambda: run(src, dst, 13, 16, BM=8, BN=16, CHECK=False))
    except AssertionError as exc:
        if "Block pointers have been removed" in str(exc):
            pytest.skip("this triton has no block pointers (tensor descriptors are tested instead)")
        raise
    assert (error.kind, error.argument, error.offset) == (READ, "src", 13 * 16 * 4)


def test_a_tensor_subclass_lying_about_data_ptr_gets_only_its_real_storage(kernels) -> None:
    victim = torch.ones(64)

    class Liar(torch.Tensor):
        def data_ptr(self) -> int:  # what Triton turns into the kernel's pointer
            return victim.data_ptr()

    x = torch.zeros(64).as_subclass(Liar)
    out = torch.zeros(64)
    error = _stopped(lambda: kernels.add_kernel[(1,)](x, out, out, 64, BLOCK=64))
    assert error.kind == READ and torch.equal(victim, torch.ones(64))


def test_a_storage_freed_during_the_launch_is_no_longer_allowed(kernels) -> None:
    x, out = torch.randn(32), torch.zeros(32)
    kernels.HOOK = lambda: x.untyped_storage().resize_(0)
    try:
        error = _stopped(lambda: kernels.resize_then_load[(1,)](x, out, BLOCK=32))
    finally:
        kernels.HOOK = None
    assert (error.kind, error.argument) == (READ, "out")  # x has no memory left; out is the nearest
    assert torch.equal(out, torch.zeros(32))


def test_the_native_module_called_by_name_from_a_kernel_is_checked(kernels, monkeypatch) -> None:
    import triton._C.libtriton as libtriton
    from triton.runtime import interpreter

    native = sys.modules["triton._C.libtriton.interpreter"]
    assert native is libtriton.interpreter is interpreter._interpreter  # every way to reach it, replaced
    monkeypatch.setattr(kernels, "_interpreter", native, raising=False)
    monkeypatch.setattr(kernels, "np", np, raising=False)
    victim = bytes(range(1, 65))
    out = torch.zeros(4)
    header = sys.getsizeof(b"") - 1
    error = _stopped(lambda: kernels.native_by_name[(1,)](out, ADDR=id(victim) + header))
    assert victim == bytes(range(1, 65))
    assert (error.kernel, error.kind, error.argument) == ("native_by_name", WRITE, "out")


def test_the_interpreters_globals_are_not_handed_to_the_kernels_module(kernels) -> None:
    x, y, out = torch.randn(16), torch.randn(16), torch.empty(16)
    kernels.add_kernel[(1,)](x, y, out, 16, BLOCK=16)
    leaked = {"np", "_interpreter", "interpreter_builder", "TensorHandle", "GridExecutor"} & set(vars(kernels))
    assert leaked == set()
    assert "interpreter_semantic" in vars(kernels)  # what the rewritten kernels refer to stays
    with pytest.raises(Exception, match="name 'np' is not defined"):
        kernels.uses_interpreter_numpy[(1,)](out, BLOCK=16)


def test_outside_any_launch_nothing_is_allowed(kernels) -> None:
    victim = bytes(range(1, 65))
    native = sys.modules["triton._C.libtriton.interpreter"]
    address = np.array([id(victim) + sys.getsizeof(b"") - 1], dtype=np.uint64)
    with pytest.raises(OutOfBoundsAccess) as info:
        native.store(address, np.zeros(1, dtype=np.uint8), np.array([True]))
    assert victim == bytes(range(1, 65))
    error = info.value
    assert (error.kernel, error.kind, error.argument, error.offset) == (NO_LAUNCH, WRITE, NO_ARGUMENT, None)


def test_a_caught_refusal_is_still_recorded(kernels) -> None:
    out, victim = torch.zeros(8), torch.ones(64)
    delta = (victim.data_ptr() - out.data_ptr()) // 4
    try:
        kernels.far_store[(1,)](out, delta, BLOCK=8)
    except Exception:
        pass
    seen = memcheck.state()
    assert len(seen.violations) == 1 and seen.wrote and seen.violations[0].kernel == "far_store"
    memcheck.reset()
    assert memcheck.state().violations == ()


def test_uninstall_passes_through_and_install_resumes(kernels) -> None:
    x, y, out = torch.randn(64), torch.randn(64), torch.empty(64)
    memcheck.uninstall()
    try:
        assert not memcheck.is_installed()
        kernels.add_kernel[(1,)](x, y, out, 64, BLOCK=64)
        assert memcheck.state().checks == 0 and memcheck.state().launches == 0
    finally:
        assert memcheck.install()
    kernels.add_kernel[(1,)](x, y, out, 64, BLOCK=64)
    assert memcheck.state().checks == 3 and torch.equal(out, x + y)


# --- the pieces ------------------------------------------------------------------------------


def test_ranges_merge_and_check_each_byte_of_an_item() -> None:
    ranges = AllowedRanges(
        [StorageSpan("a", 1000, 100, 1000), StorageSpan("b", 1100, 50, 1100), StorageSpan("c", 5000, 16, 5008)]
    )
    assert ranges.starts == [1000, 5000] and ranges.ends == [1150, 5016]  # a and b touch: one range
    addresses = np.array([1000, 1146, 1147, 999, 5012, 5013, 2**64 - 2, 3000], dtype=np.uint64)
    assert ranges.outside(addresses, 4).tolist() == [False, False, True, True, False, True, True, True]
    assert ranges.holds_block(1000, 1146, 4) and not ranges.holds_block(1000, 1147, 4)
    assert not ranges.holds_block(1000, 5000, 4)  # both ends inside, the gap between them is not
    assert ranges.nearest(1200).argument == "b" and ranges.nearest(4000).argument == "c"


def test_empty_and_null_storages_allow_nothing() -> None:
    ranges = AllowedRanges([StorageSpan("empty", 4096, 0, 4096), StorageSpan("null", 0, 64, 0)])
    assert ranges.starts == [] and ranges.nearest(4096) is None
    assert ranges.outside(np.array([0, 4096], dtype=np.uint64), 1).all()


def test_a_range_too_small_for_the_item_refuses_it() -> None:
    ranges = AllowedRanges([StorageSpan("byte", 4096, 2, 4096)])
    assert ranges.outside(np.array([4096], dtype=np.uint64), 4).tolist() == [True]
    assert ranges.outside(np.array([4096, 4097], dtype=np.uint64), 1).tolist() == [False, False]


def test_the_error_pickles_and_is_found_in_an_exception_chain() -> None:
    error = OutOfBoundsAccess("k", WRITE, "out", 4096, 3, 123456, (0, 64))
    copy = pickle.loads(pickle.dumps(error))
    assert copy.to_dict() == error.to_dict() and copy.to_dict()["writes"] is True
    assert "'k'" in str(error) and "write" in str(error) and "4096" in str(error) and "'out'" in str(error)
    try:
        try:
            raise error
        except OutOfBoundsAccess as inner:
            raise RuntimeError("InterpreterError(...)") from inner
    except RuntimeError as outer:
        assert memcheck.find_out_of_bounds(outer) is error
    assert memcheck.find_out_of_bounds(ValueError("x")) is None and memcheck.find_out_of_bounds(None) is None


SCRIPT = r"""
import json, os, sys
os.environ["TRITON_INTERPRET"] = "1"
from ascend_kernel_gym.backends import interpreter_compat, interpreter_memcheck as memcheck
interpreter_compat.install()
assert memcheck.install()
import torch, triton, triton.language as tl
import triton._C.libtriton as libtriton
from triton.runtime import interpreter

@triton.jit
def wild(out, delta, ADDR: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    if ADDR == 0:
        tl.store(out + delta + offs, tl.zeros((BLOCK,), tl.float32))
    else:
        p = tl.full((BLOCK,), ADDR, tl.int64).to(tl.pointer_type(tl.float32))
        tl.store(out, tl.sum(tl.load(p + offs), axis=0))

out = torch.zeros(16)
results = {
    "proxied": [interpreter._interpreter is libtriton.interpreter,
                sys.modules["triton._C.libtriton.interpreter"] is libtriton.interpreter,
                memcheck.is_installed()],
}
for name, delta, addr in (("far", 2**40, 0), ("negative", -(2**20), 0), ("null", 0, 8), ("top", 0, 2**63 - 64)):
    try:
        wild[(1,)](out, delta, ADDR=addr, BLOCK=16)
        results[name] = "ran"
    except Exception as exc:
        found = memcheck.find_out_of_bounds(exc)
        results[name] = found.to_dict() if found else repr(exc)
print(json.dumps(results))
"""


def test_wild_addresses_in_a_fresh_process() -> None:
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    assert results["proxied"] == [True, True, True]
    for name, kind in (("far", WRITE), ("negative", WRITE), ("null", READ), ("top", READ)):
        assert isinstance(results[name], dict), (name, results[name])
        assert results[name]["kernel"] == "wild" and results[name]["kind"] == kind and results[name]["count"] == 16
        assert results[name]["argument"] == "out"
    assert results["far"]["offset"] == 2**40 * 4
    assert results["negative"]["offset"] == -(2**20) * 4


def triton_cdiv(a: int, b: int) -> int:
    return -(-a // b)
