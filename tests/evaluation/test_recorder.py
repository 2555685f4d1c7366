"""The launch / operator recorder (evaluation/recorder.py): the fill of uninitialised memory during
checked calls, the stream probes of the timing stage, its helpers."""

from __future__ import annotations

import collections
import contextlib
import enum
import math
import os
import re
import subprocess
import sys
import typing

import torch

from ascend_kernel_gym.evaluation.errors import StageError
from ascend_kernel_gym.evaluation.recorder import Recorder


def _recorded(recorder: Recorder, fn):
    with recorder.recording_forward(()) as stats:
        out = fn()
    return out, stats


def test_fresh_allocations_are_poisoned_per_dtype() -> None:
    recorder = Recorder("akg_candidate")
    floats, stats = _recorded(recorder, lambda: torch.empty(5, dtype=torch.float16))
    assert torch.isnan(floats).all()
    assert stats.ops["aten.empty"] == 1 and "aten.fill_" not in stats.ops  # the fill is the harness's
    first, _ = _recorded(recorder, lambda: torch.empty_like(torch.zeros(4, dtype=torch.int64)))
    second, _ = _recorded(recorder, lambda: torch.zeros(4, dtype=torch.int64).new_empty(4))
    info = torch.iinfo(torch.int64)
    # alternating extremes: an unwritten element differs between two calls on the same inputs
    assert {int(first[0]), int(second[0])} == {info.max, info.min}
    flags, _ = _recorded(recorder, lambda: torch.empty(3, dtype=torch.bool))
    more, _ = _recorded(recorder, lambda: torch.empty(3, dtype=torch.bool))
    assert bool(flags.all()) != bool(more.all())
    complex_, _ = _recorded(recorder, lambda: torch.empty_strided((2, 2), (2, 1), dtype=torch.complex64))
    assert all(math.isnan(v.real) for v in complex_.flatten().tolist())


def test_written_memory_and_unrecorded_calls_are_left_alone() -> None:
    recorder = Recorder("akg_candidate")
    zeros, _ = _recorded(recorder, lambda: torch.zeros(3))
    assert (zeros == 0).all()  # zeros is written memory, not uninitialised
    written, _ = _recorded(recorder, lambda: torch.empty(3).fill_(2.0))
    assert (written == 2.0).all()  # a fill after the allocation wins, as a kernel's store would
    before = recorder.poisoned
    torch.empty(1000)  # not inside a recorded call (timed calls, the harness's own work)
    assert recorder.poisoned == before > 0
    expanded, _ = _recorded(recorder, lambda: torch.empty(1).expand(4))  # a view of a filled allocation
    assert torch.isnan(expanded).all()


def test_kernel_arguments_that_imitate_tensors_are_refused() -> None:
    from ascend_kernel_gym.evaluation.launch_args import LaunchArgumentPolicy

    policy = LaunchArgumentPolicy()
    ran = []

    class Trojan:
        @property
        def data_ptr(self):
            ran.append("data_ptr")
            return 0

    class Lazy:
        def __getattr__(self, name):
            ran.append(name)
            raise AttributeError(name)

    class Shaped(tuple):
        pass

    plain = [torch.zeros(2), torch.nn.Parameter(torch.zeros(2)), 3, 2.5, True, None, "relu", (1, (torch.ones(1),))]
    assert policy.check("k", [(f"a{i}", v) for i, v in enumerate(plain)]) is None
    for bad in (Trojan(), Lazy(), Shaped((1, 2)), (1, Trojan())):
        refusal = policy.check("k", [("x_ptr", torch.zeros(1)), ("y_ptr", bad)])
        assert refusal is not None
        assert re.search(r"not a torch.Tensor|not a tensor or a plain value", refusal.message)
        assert "argument `y_ptr`" in refusal.message and "kernel `k`" in refusal.message
    assert ran == []  # refused without running any of the object's own code


def test_autotune_hooks_other_than_tritons_are_refused() -> None:
    import types

    import pytest

    from ascend_kernel_gym.evaluation.errors import StageError
    from ascend_kernel_gym.evaluation.recorder import _refuse_foreign_hooks

    def candidate_hook(*args, **kwargs):
        return 0

    candidate_hook.__module__ = "akg_candidate"
    triton_hook = eval("lambda kwargs, reset_only=False: 0", {"__name__": "triton.runtime.autotuner"})
    tuner = types.SimpleNamespace(pre_hook=triton_hook, post_hook=triton_hook, _do_bench=None)
    _refuse_foreign_hooks(tuner, types.SimpleNamespace(pre_hook=None))
    for name in ("pre_hook", "post_hook", "_do_bench"):
        with pytest.raises(StageError, match="autotune"):
            _refuse_foreign_hooks(types.SimpleNamespace(**{**vars(tuner), name: candidate_hook}), None)
    with pytest.raises(StageError, match="autotune"):
        _refuse_foreign_hooks(tuner, types.SimpleNamespace(pre_hook=candidate_hook))


def test_python_per_element_maps_are_recorded(monkeypatch) -> None:
    from ascend_kernel_gym.evaluation.recorder import PYTHON_MAP_METHODS

    for name in PYTHON_MAP_METHODS:  # restored after the test: the patch is process-wide
        monkeypatch.setattr(torch.Tensor, name, getattr(torch.Tensor, name))
    recorder = Recorder("akg_candidate")
    recorder._record_python_maps()
    x = torch.randn(8)
    out, stats = _recorded(recorder, lambda: torch.zeros(8).map_(x, lambda o, v: max(v, 0.0)))
    assert torch.equal(out, x.clamp(min=0))
    assert any("map_" in op for op in stats.ops)


def test_launch_records_never_run_code_of_the_values() -> None:
    from ascend_kernel_gym.evaluation.recorder import _jsonable

    ran = []

    class Loud:
        def __repr__(self):
            ran.append("repr")
            return "loud"

        @property
        def value(self):
            ran.append("value")
            return 1

    assert _jsonable(Loud()) == "<Loud>" and ran == []
    assert _jsonable(3) == 3 and _jsonable(torch.float16) == "float16"


def _taint_of_output(recorder: Recorder, inputs: list[torch.Tensor], fn) -> str | None:
    with recorder.recording_forward(inputs) as stats:
        out = fn()
    return stats.tainted.get(out.untyped_storage().data_ptr())


def test_rearranging_copies_of_an_unchanged_input_copy_are_tainted() -> None:
    recorder = Recorder("akg_candidate")
    x = torch.randn(2, 3, 4, 5)
    # memory a kernel filled with an exact copy of the input: written outside the recorded
    # operators, as a Triton store is
    buf = x.clone()
    padded = torch.empty(x.numel() + 64)
    padded[16 : 16 + x.numel()] = x.reshape(-1)
    inside = padded[16 : 16 + x.numel()].view(x.shape)
    copied = "aten.clone of an unchanged copy of an input"
    assert _taint_of_output(recorder, [x], lambda: buf.transpose(1, 2).contiguous()) == copied
    assert _taint_of_output(recorder, [x], lambda: buf.permute(0, 2, 3, 1).clone()) == copied
    # a contiguous source copied into a strided layout rearranges too
    assert _taint_of_output(recorder, [x], lambda: buf.contiguous(memory_format=torch.channels_last)) == copied
    assert _taint_of_output(recorder, [x], lambda: inside.transpose(1, 2).contiguous()) == copied
    out = torch.empty(2, 4, 3, 5)
    assert _taint_of_output(recorder, [x], lambda: out.copy_(buf.transpose(1, 2))) == (
        "aten.copy_ of an unchanged copy of an input"
    )
    # the same copies of a computed result, and a plain clone of an unchanged copy, are not tainted
    computed = x * 2
    assert _taint_of_output(recorder, [x], lambda: computed.transpose(1, 2).contiguous()) is None
    assert _taint_of_output(recorder, [x], lambda: buf.clone()) is None
    assert recorder.input_bytes == []  # nothing of the call's inputs is kept after it


def test_fresh_allocations_forget_the_taint_of_their_address() -> None:
    recorder = Recorder("akg_candidate")
    reused = torch.empty(8)
    recorder.tainted[reused.untyped_storage().data_ptr()] = "aten.clone of an input"
    recorder.forget(reused)
    assert recorder.tainted == {}
    recorder.forget(torch.empty(2, 2).to_sparse())  # no storage to forget; never raises


def test_compiled_launches_report_their_register_spills() -> None:
    recorder = Recorder("akg_candidate")
    launch_metadata = recorder._probing_stream_handles(lambda kernel, grid, stream, *args: "metadata")

    class Loaded:  # a CompiledKernel once its binary is loaded
        n_spills = 12

    class NotLoaded:  # before that, Triton has no spill count yet
        pass

    assert launch_metadata(NotLoaded(), (1,), 0) == "metadata" and recorder.max_spills == 0
    launch_metadata(Loaded(), (1,), 0)
    Loaded.n_spills = 3
    launch_metadata(Loaded(), (1,), 0)
    assert recorder.max_spills == 12  # the most any launch spilled


PROBE_SCRIPT = r"""
import os
os.environ["TRITON_INTERPRET"] = "1"
import sys, types
import torch, triton, triton.language as tl
from ascend_kernel_gym.evaluation.recorder import Recorder

mod = types.ModuleType("probe_candidate")
exec('''
import triton, triton.language as tl
@triton.jit
def copy_kernel(x, y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y + offs, tl.load(x + offs, mask=offs < n), mask=offs < n)
''', mod.__dict__)
recorder = Recorder("probe_candidate")
recorder.install()
x = torch.arange(8.0); y = torch.empty_like(x)
mod.copy_kernel[(1,)](x, y, 8, BLOCK=8)
seen = []
recorder.stream_probe = lambda: seen.append(1)
mod.copy_kernel[(2,)](x, y, 8, BLOCK=4)
recorder.stream_probe = None
mod.copy_kernel[(1,)](x, y, 8, BLOCK=8)
assert torch.equal(x, y)
print("probes", len(seen))
"""


HANDLE_PROBE_SCRIPT = r"""
import os
os.environ.pop("TRITON_INTERPRET", None)
from triton.compiler.compiler import CompiledKernel
from ascend_kernel_gym.evaluation.recorder import Recorder

recorder = Recorder("probe_candidate")
recorder.install()
seen = []
recorder.stream_handle_probe = seen.append
class Loaded:  # what launch_metadata reads of a loaded kernel (no device needed)
    name, function, src = "k", 0, None
    def _init_handles(self):
        pass
CompiledKernel.launch_metadata(Loaded(), (1, 1, 1), 1234)
recorder.stream_handle_probe = None
CompiledKernel.launch_metadata(Loaded(), (1, 1, 1), 99)
print("handles", seen)
"""


def test_recorder_sees_the_stream_of_compiled_launches_that_bypass_jit_run() -> None:
    out = subprocess.run([sys.executable, "-c", HANDLE_PROBE_SCRIPT], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "handles [1234]" in out.stdout


def test_recorder_probes_every_launch_while_a_stream_probe_is_set() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE_SCRIPT], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "probes 1" in out.stdout


# --- issue 21, point 4: exact tensors and plain values only -------------------------------------
def test_only_exact_tensors_and_plain_values_pass_and_nothing_of_the_value_runs() -> None:
    import triton.language as tl

    from ascend_kernel_gym.evaluation.launch_args import LaunchArgumentPolicy
    from ascend_kernel_gym.evaluation.result import ErrorType

    policy = LaunchArgumentPolicy()  # built before the classes below exist: none of them is known
    ran: list[str] = []

    class Sub(torch.Tensor):
        def new_empty(self, *args, **kwargs):
            ran.append("new_empty")
            return super().new_empty(*args, **kwargs)

    class Param(torch.nn.Parameter):
        pass

    class Meta(type):
        def __getattribute__(cls, name):
            ran.append(f"meta.{name}")
            return super().__getattribute__(name)

        def __instancecheck__(cls, obj):
            ran.append("instancecheck")
            return True

        def __eq__(cls, other):
            ran.append("eq")
            return True

        def __hash__(cls):
            ran.append("hash")
            return 0

    class Odd(metaclass=Meta):
        pass

    class CudaLike:
        __cuda_array_interface__: typing.ClassVar[dict] = {
            "data": (0, False),
            "shape": (4,),
            "typestr": "<f4",
            "version": 3,
        }

    class Mode(enum.IntEnum):
        A = 1

    class Count(int):  # not an enum: its methods would be what Triton calls
        pass

    Pair = collections.namedtuple("Pair", "a b")

    class Typed(typing.NamedTuple):
        a: torch.Tensor
        b: int

    x = torch.zeros(4)
    allowed = [
        x,
        torch.nn.Parameter(x.clone()),
        0,
        1.5,
        False,
        None,
        "s",
        torch.float16,
        tl.float32,
        tl.pointer_type(tl.float32),
        tl.constexpr(8),
        tl.constexpr(None),
        tl.maximum,
        (x, 2),
        Pair(x, 1),
        Typed(x, 2),
        ((((x,),),),),
        Mode.A,  # issue 22: an IntEnum member is an int (handed to Triton as one, see test_launch_args.py)
    ]
    for value in allowed:
        assert policy.problem(value) is None, value
    refused = {
        "tensor subclass": x.as_subclass(Sub),
        "parameter subclass": Param(x.clone()),
        "metaclass": Odd(),
        "cuda array interface": CudaLike(),
        "int subclass": Count(3),
        "list": [x],
        "wrapped fake": tl.constexpr(CudaLike()),
        "namedtuple of a subclass": Pair(x.as_subclass(Sub), 1),
        "too deep": (((((((((((x,),),),),),),),),),),),
        "a size": torch.Size([4]),
    }
    for what, value in refused.items():
        refusal = policy.check("relu_kernel", [("x_ptr", x), ("out_ptr", value)])
        assert refusal is not None, what
        assert refusal.error_type == ErrorType.FORBIDDEN and "argument `out_ptr`" in refusal.message, what
    assert "`Sub`, not a torch.Tensor" in policy.check("k", [("x", x.as_subclass(Sub))]).message
    assert "`Odd` object" in policy.check("k", [("x", Odd())]).message
    assert ran == [], ran


def test_tensor_descriptors_pass_only_over_exact_tensors() -> None:
    from triton.tools.tensor_descriptor import TensorDescriptor

    from ascend_kernel_gym.evaluation.launch_args import LaunchArgumentPolicy

    policy = LaunchArgumentPolicy()
    base = torch.zeros(16, 16)
    honest = TensorDescriptor.from_tensor(base, [8, 8])
    assert policy.problem(honest) is None

    class Sub(torch.Tensor):
        pass

    forged = object.__new__(TensorDescriptor)
    forged.__dict__.update(vars(honest), base=base.as_subclass(Sub))
    assert "base is not exactly a torch.Tensor" in policy.problem(forged)
    odd_shape = object.__new__(TensorDescriptor)
    odd_shape.__dict__.update(vars(honest), shape=[16, 16.5])
    assert "shape is not a sequence of ints" in policy.problem(odd_shape)


def test_long_constexpr_strings_are_cut_in_launch_records() -> None:
    from ascend_kernel_gym.evaluation.recorder import MAX_RECORD_STRING, _jsonable

    big = "x" * (16 << 20)
    kept = _jsonable(big)
    assert len(kept) < MAX_RECORD_STRING + 40 and kept.endswith(f"[{len(big) - MAX_RECORD_STRING} characters cut]")
    assert _jsonable("short") == "short"


REFUSAL_SCRIPT = r'''
import os
os.environ["TRITON_INTERPRET"] = "1"
import types
import torch, triton, triton.language as tl
from ascend_kernel_gym.evaluation.errors import StageError
from ascend_kernel_gym.evaluation.recorder import Recorder

recorder = Recorder("probe_candidate")
recorder.install()
mod = types.ModuleType("probe_candidate")
source = """
import torch, triton, triton.language as tl
ran = []
class Lazy(torch.Tensor):
    def new_empty(self, *args, **kwargs):
        ran.append("new_empty")
        return super().new_empty(*args, **kwargs)
    def zero_(self):
        ran.append("zero_")
        return super().zero_()
    def data_ptr(self):
        ran.append("data_ptr")
        return super().data_ptr()
@triton.jit
def copy_kernel(x, y, n, BLOCK: tl.constexpr, NOTE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y + offs, tl.load(x + offs, mask=offs < n), mask=offs < n)
@triton.autotune(configs=[triton.Config({"BLOCK": 4}), triton.Config({"BLOCK": 8})], key=["n"], reset_to_zero=["y"])
@triton.jit
def tuned_kernel(x, y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y + offs, tl.load(x + offs, mask=offs < n), mask=offs < n)
"""
path = os.path.join(os.environ["PROBE_DIR"], "probe_candidate.py")
with open(path, "w") as handle:
    handle.write(source)
exec(compile(source, path, "exec"), mod.__dict__)
x = torch.arange(8.0)
y = torch.empty_like(x)
big = "n" * (16 << 20)
with recorder.recording_forward((x,)):
    mod.copy_kernel[(1,)](x, y, 8, BLOCK=8, NOTE=big)  # exact tensors: launched and recorded
assert torch.equal(x, y)
record = recorder.launches[0]
print("record", len(record.constexprs["NOTE"]), "notes", len(recorder.notes), "NOTE" in recorder.notes[0])
outcomes = []
for name, launch in [
    ("recorded", lambda: mod.copy_kernel[(1,)](x, y.as_subclass(mod.Lazy), 8, BLOCK=8, NOTE="")),
    ("unrecorded", lambda: mod.copy_kernel[(1,)](x.as_subclass(mod.Lazy), y, 8, BLOCK=8, NOTE="")),
    ("autotuned", lambda: mod.tuned_kernel[(1,)](x, y.as_subclass(mod.Lazy), 8)),
]:
    try:
        if name == "unrecorded":
            launch()
        else:
            with recorder.recording_forward((x,)):
                launch()
    except StageError as exc:
        outcomes.append((name, exc.error_type.value, exc.message.split(";")[0]))
print("outcomes", outcomes)
print("ran", mod.ran, "refusal", recorder.refusal is not None)
'''


def test_a_tensor_subclass_argument_is_refused_before_triton_or_the_harness_touches_it(tmp_path) -> None:
    env = {**os.environ, "PROBE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", REFUSAL_SCRIPT], capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    from ascend_kernel_gym.evaluation.recorder import MAX_RECORD_STRING

    cut = len(f"... [{(16 << 20) - MAX_RECORD_STRING} characters cut]")
    assert f"record {MAX_RECORD_STRING + cut} notes 1 True" in out.stdout, out.stdout
    assert "('recorded', 'forbidden', 'kernel `copy_kernel`: argument `y` is a `Lazy`" in out.stdout, out.stdout
    assert "('unrecorded', 'forbidden', 'kernel `copy_kernel`: argument `x` is a `Lazy`" in out.stdout
    assert "('autotuned', 'forbidden', 'kernel `tuned_kernel`: argument `y` is a `Lazy`" in out.stdout
    assert "ran [] refusal True" in out.stdout  # none of the subclass's methods ran


# --- issue 22 point 5: a PyTorch copy that a kernel then overwrites entirely ---------------------
def _probe_after(launch, out: torch.Tensor, *args):
    """Run ``launch`` on (out, *args) as the recorder runs a kernel, with ``out`` tainted as a
    clone of an input; the storages the probe finds overwritten."""
    from ascend_kernel_gym.evaluation.overwrite_probe import OverwriteProbe

    ptr = out.untyped_storage().data_ptr()
    probe = OverwriteProbe.prepare((out, *args), {"n": out.numel()}, {ptr: "aten.clone of an input"})
    assert probe is not None
    launch((out, *args), {"n": out.numel()})
    return probe.overwritten(launch), ptr


def test_a_copy_overwritten_entirely_and_independently_is_found() -> None:
    x = torch.randn(64)

    def honest(a, k):  # writes every element of out from x alone
        torch.clamp(a[1], min=0.0, out=a[0])

    found, ptr = _probe_after(honest, x.clone(), x)
    assert found == [ptr]


def test_a_copy_left_alone_written_back_or_half_written_stays_pytorchs() -> None:
    x = torch.randn(64)
    ran: list[int] = []

    def half(a, k):
        ran.append(1)
        a[0][:32] = a[1][:32].clamp(min=0.0)

    def from_itself(a, k):  # every element written, from the values PyTorch put there
        a[0].copy_(a[0].flip(0).flip(0) * 1.0 + 0.0)

    def doubled(a, k):  # every element changed, from its own old value
        a[0].mul_(2.0)

    assert _probe_after(half, x.clone(), x)[0] == [] and ran == [1, 1]  # the probe ran it again
    ran.clear()
    assert _probe_after(from_itself, x.clone(), x)[0] == []
    assert _probe_after(doubled, x.clone(), x)[0] == []
    assert _probe_after(lambda a, k: None, x.clone(), x)[0] == []  # unchanged: no second run needed

    def fails_twice(a, k):
        if ran:
            raise RuntimeError("second run")
        ran.append(1)
        a[0].copy_(a[1])

    assert _probe_after(fails_twice, x.clone(), -x)[0] == []


def test_an_index_copy_overwritten_keeps_its_values_in_the_second_run() -> None:
    """The second run shuffles the copied memory: a kernel that reads indices from it still gets
    valid indices (every value is kept), and one that overwrites it entirely is found."""
    table = torch.arange(10.0)
    idx = torch.randint(0, 10, (32,))
    seen: list[torch.Tensor] = []

    def gather_then_overwrite(a, k):
        seen.append(a[0].clone())
        a[1].copy_(table[a[0]])  # reads the index copy
        a[0].fill_(3)  # then overwrites all of it, from nothing it held

    from ascend_kernel_gym.evaluation.overwrite_probe import OverwriteProbe

    copy, out = idx.clone(), torch.zeros(32)
    ptr = copy.untyped_storage().data_ptr()
    probe = OverwriteProbe.prepare((copy, out), {}, {ptr: "aten.clone of an input"})
    assert probe is not None
    gather_then_overwrite((copy, out), {})
    assert probe.overwritten(gather_then_overwrite) == [ptr]
    assert sorted(seen[1].tolist()) == sorted(seen[0].tolist()) and not torch.equal(seen[1], seen[0])


def test_launches_without_copied_memory_are_not_probed_and_nested_tensors_not_run_again() -> None:
    from ascend_kernel_gym.evaluation.overwrite_probe import OverwriteProbe

    x = torch.randn(8)
    out = x.clone()
    ptr = out.untyped_storage().data_ptr()
    assert OverwriteProbe.prepare((out, x), {}, {}) is None
    assert OverwriteProbe.prepare((out, x), {}, {ptr: "an input"}) is None  # an input: the aliasing check's
    nested = OverwriteProbe.prepare(((out, x),), {}, {ptr: "aten.clone of an input"})
    assert nested is not None and not nested.second_run  # checked for copies, never run again
    assert OverwriteProbe.prepare((out, [x]), {}, {ptr: "aten.clone of an input"}) is None
    assert OverwriteProbe.prepare((out, 3, 1.5, None, torch.float32), {}, {ptr: "aten.clone of an input"})


def test_a_kernel_copy_of_a_rearranged_pytorch_copy_carries_its_taint() -> None:
    """PyTorch transposes into a scratch buffer, a kernel copies it into a fresh output: the output
    is PyTorch's work (``launder_kernel_copy_of_torch_answer``); copying an unchanged clone of an
    input, or computing from the transposed copy, is the kernel's own."""
    from ascend_kernel_gym.evaluation.input_copies import tensor_bytes
    from ascend_kernel_gym.evaluation.overwrite_probe import OverwriteProbe

    x = torch.randn(4, 16, 24)
    inputs = [tensor_bytes(x)]
    taint = "aten.clone of an input"

    def copies(source: torch.Tensor, write) -> tuple[dict[int, str], int]:
        out = torch.empty(source.shape)
        tainted = {source.untyped_storage().data_ptr(): taint}
        probe = OverwriteProbe.prepare((source, out), {}, tainted)
        assert probe is not None
        write(source, out)
        return probe.kernel_copies(inputs, tainted), out.untyped_storage().data_ptr()

    transposed = x.transpose(1, 2).contiguous()
    found, out_ptr = copies(transposed, lambda s, o: o.copy_(s))
    assert found == {out_ptr: taint}
    found, _ = copies(transposed, lambda s, o: torch.clamp(s, min=0.0, out=o))
    assert found == {}
    found, _ = copies(x.clone(), lambda s, o: o.copy_(s))  # an unchanged copy of the input: own work
    assert found == {}
    # the same copy when the tensors are handed over in a tuple (no second run, the check still runs)
    out = torch.empty(transposed.shape)
    tainted = {transposed.untyped_storage().data_ptr(): taint}
    probe = OverwriteProbe.prepare(((transposed, out),), {}, tainted)
    assert probe is not None and not probe.second_run
    out.copy_(transposed)
    assert probe.kernel_copies(inputs, tainted) == {out.untyped_storage().data_ptr(): taint}
    assert probe.overwritten(lambda a, k: None) == []


def test_a_kernel_writing_past_its_argument_view_is_searched_in_the_whole_storage() -> None:
    """A memcpy kernel handed a one-element view of its output writes all of the storage by pointer
    arithmetic (``launder_tiny_view_argument``): the copy check searches what the launch changed."""
    from ascend_kernel_gym.evaluation.input_copies import tensor_bytes
    from ascend_kernel_gym.evaluation.overwrite_probe import OverwriteProbe

    x = torch.randn(4, 16, 24)
    taint = "aten.clone of an input"
    source = x.transpose(1, 2).contiguous()
    out = torch.full_like(source, float("nan"))
    tainted = {source.untyped_storage().data_ptr(): taint}
    probe = OverwriteProbe.prepare((source, out.view(-1)[:1]), {}, tainted)
    assert probe is not None
    out.copy_(source)
    assert probe.kernel_copies([tensor_bytes(x)], tainted) == {out.untyped_storage().data_ptr(): taint}


def test_a_check_that_fails_inside_the_call_is_kept_even_when_the_candidate_catches_it(monkeypatch) -> None:
    """The search of a PyTorch copy runs inside the candidate's call, after the copy was made. An
    allocation failure there goes up through the candidate's code, and a ``with`` block whose
    ``__exit__`` returns true would keep the copy unchecked: the recorder keeps the failure, as the
    harness's out of memory (retried alone like a neighbour's), and the call ends with it."""
    from ascend_kernel_gym.evaluation import taint
    from ascend_kernel_gym.evaluation.concurrency import neighbour_oom
    from ascend_kernel_gym.evaluation.errors import HARNESS_OUT_OF_MEMORY
    from ascend_kernel_gym.evaluation.result import ErrorType, EvalResult

    def out_of_memory(*args, **kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    monkeypatch.setattr(taint, "copied_input_piece", out_of_memory)

    class Swallow:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return True

    recorder = Recorder("akg_candidate")
    x = torch.randn(2, 3, 4, 5)
    computed = x * 2
    with recorder.recording_forward([x]):
        with Swallow():
            computed.transpose(1, 2).contiguous()
    failure = recorder.check_failure
    assert failure is not None and failure.error_type == ErrorType.HARNESS_ERROR
    assert failure.message.startswith(f"{HARNESS_OUT_OF_MEMORY} (following the data of the PyTorch operator")
    result = EvalResult("t", "cuda", "full", "h", error_type=failure.error_type, error_message=failure.message)
    assert neighbour_oom(result, had_neighbour=True)
    # a refusal of the harness's is no check failure: it is raised (and kept) as it is
    other = Recorder("akg_candidate")
    with other.checking("anything"), contextlib.suppress(StageError):
        raise StageError(ErrorType.FORBIDDEN, "refused")
    assert other.check_failure is None


def test_in_a_task_that_only_moves_data_pytorch_may_not_move_the_kernels_data() -> None:
    """A kernel that XORs the input, PyTorch's transpose of that, and a kernel that XORs it back
    (``launder_encoded_torch_transpose``): the copy PyTorch made holds no byte of the input. In a
    task whose reference only moves data, a rearranging or converting PyTorch copy is the task's
    work whatever it copies (the input too: in pieces under 256 bytes no sample of it would be
    kept), and is refused; a plain copy is not, nor is anything in other tasks."""
    from ascend_kernel_gym.evaluation.recorder import moves_data_only
    from ascend_kernel_gym.evaluation.result import ErrorType

    assert moves_data_only({"aten.transpose", "aten.clone"}) and moves_data_only({"aten.cat", "aten._to_copy"})
    assert not moves_data_only({"aten.transpose", "aten.clone", "aten.mul"}) and not moves_data_only(set())

    x = torch.randn(2, 3, 70)
    written = x.view(torch.int32) ^ 0x5A5A5A5A  # as a kernel writes it: outside the recorded operators
    for moving, make, refused in (
        (True, lambda: written.transpose(1, 2).contiguous(), True),
        (True, lambda: written.to(torch.int64), True),
        (True, lambda: torch.cat([written, written]), True),
        (True, lambda: x.transpose(1, 2).contiguous(), True),  # the input's own data: refused as well
        (True, lambda: written.clone(), False),  # a plain copy moves nothing
        (True, lambda: x.clone(), False),  # nor does a copy of the input as passed
        (True, lambda: torch.empty(2, 3, 70).copy_(written.view(torch.float32)), False),  # whole into whole
        # one element, one row at a time: contiguous both sides, the same dtype, still moving data
        (True, lambda: torch.empty(210, dtype=torch.int32)[5].copy_(written.view(-1)[7]), True),
        (True, lambda: torch.empty(2, 3, 70, dtype=torch.int32)[1].copy_(written[0]), True),
        (True, lambda: x[0].clone(), True),  # part of an input
        # a broadcast: both sides contiguous, the source repeated into a bigger target
        (True, lambda: torch.empty(2, 4, 3, 70, dtype=torch.int32).copy_(written.unsqueeze(1)), True),
        (True, lambda: torch.empty(2, 3, 70).fill_(x[0, 0, 0]), True),  # a 0-d tensor value is data
        (True, lambda: torch.empty(2, 3, 70).fill_(1.5), False),  # a constant is not
        (False, lambda: written.transpose(1, 2).contiguous(), False),
        (False, lambda: torch.empty(2, 3, 70, dtype=torch.int32)[1].copy_(written[0]), False),
    ):
        recorder = Recorder("akg_candidate")
        recorder.moving_task = moving
        try:
            with recorder.recording_forward([x]):
                make()
        except StageError as failure:
            assert refused and failure.error_type == ErrorType.TORCH_FALLBACK and "only moves data" in failure.message
            assert recorder.refusal is not None  # kept: a candidate that swallows it still ends with it
        else:
            assert not refused


def test_only_rearranged_copies_leave_pieces_for_the_output_check() -> None:
    """A transposing copy of the input leaves pieces (copy_samples); an upcast does not: an honest
    kernel that is the identity on part of the values (relu on mostly positive inputs, after a
    PyTorch upcast) writes long runs of the upcast copy, and laundering a conversion gains nothing
    but a conversion, which the data-movement rule refuses."""
    x = torch.randn(4, 64, 48) + 2.0
    recorder = Recorder("akg_candidate")
    with recorder.recording_forward([x]) as stats:
        widened = x.to(torch.float64)
    assert stats.tainted.get(widened.untyped_storage().data_ptr()) == "aten._to_copy of an input"
    assert stats.samples.tiles == []
    with recorder.recording_forward([x]) as stats:
        moved = x.transpose(1, 2).contiguous()
    assert stats.samples.tiles and {what for _, _, what in stats.samples.tiles} == {"aten.clone of an input"}
    relu_like = torch.where(moved > 0, moved, torch.zeros_like(moved))  # written as a kernel would
    assert stats.samples.found_in(relu_like, stats.input_bytes) == "aten.clone of an input"


def test_a_fill_from_a_tensor_is_a_copy_of_its_element() -> None:
    """``fill_`` given a 0-d tensor moves that element: the input's taint goes with it (a constant
    fill drops the taint of what it covers), and a fill broadcasting the element is a rearranging
    copy (refused where the task only moves data); a fill with a Python number stays a constant."""
    x = torch.randn(4, 100)
    recorder = Recorder("akg_candidate")
    with recorder.recording_forward([x]) as stats:
        from_input = torch.empty(4, 100).fill_(x[1, 2])
        constant = torch.empty(4, 100).fill_(0.5)
    assert stats.tainted.get(from_input.untyped_storage().data_ptr()) == "aten.fill_ of an input"
    assert constant.untyped_storage().data_ptr() not in stats.tainted
    assert stats.samples.tiles == []  # one value repeated is constant memory, never taken for a copy


def test_only_plain_copies_of_inputs_become_a_kernels_by_in_place_work() -> None:
    """A whole, same-dtype, same-arrangement copy of an input (and a copy of such a copy) is memory
    a kernel may work on in place; a copy that rearranged or converted is not, nor anything a
    rearranging copy wrote into later."""
    x = torch.randn(4, 64)
    recorder = Recorder("akg_candidate")
    with recorder.recording_forward([x]):
        plain = x.clone()
        again = plain.clone()
        moved = x.t().contiguous()
        converted = x.double()
        overwritten = x.clone()
        overwritten.copy_(x.t().contiguous().view(4, 64))
        conjugated = torch.empty(4, 32, dtype=torch.complex64)
        conjugated.copy_(torch.view_as_complex(x.view(4, 32, 2)).conj())  # changes values: converts
        x.copy_(x.t().contiguous().view(4, 64))  # PyTorch's transpose written into the input itself
        of_written_input = x.clone()
        names = ("plain", "again", "moved", "converted", "overwritten", "conjugated", "of_written_input")
        reworked = {name: recorder.reworked(t.untyped_storage().data_ptr()) for name, t in locals().items()
                    if name in names}  # fmt: skip
    assert reworked == {
        "plain": True,
        "again": True,
        "moved": False,
        "converted": False,
        "overwritten": False,
        "conjugated": False,
        "of_written_input": False,
    }
