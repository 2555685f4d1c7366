"""Numeric comparison and hidden-input helpers (in-process, CPU)."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from ascend_kernel_gym.evaluation import correctness as cx  # noqa: E402


def test_compare_reports_first_bad_index_and_errors() -> None:
    ref = torch.zeros(3, 4)
    cand = ref.clone()
    cand[1, 2] = 0.5
    cand[2, 0] = -2.0
    cmp = cx.compare(cand, ref, atol=1e-3, rtol=1e-3)
    assert not cmp.ok
    assert cmp.first_bad_index == [1, 2]
    assert cmp.max_abs_err == pytest.approx(2.0)
    assert cmp.bad_count == 2
    assert cmp.cand_value == pytest.approx(0.5) and cmp.ref_value == 0.0
    assert math.isfinite(cmp.max_rel_err)


def test_compare_tolerances_and_special_values() -> None:
    ref = torch.tensor([1.0, 100.0, float("nan"), float("inf")])
    ok = torch.tensor([1.00005, 100.009, float("nan"), float("inf")])
    assert cx.compare(ok, ref, atol=1e-4, rtol=1e-4).ok
    bad_nan = torch.tensor([float("nan"), 100.0, float("nan"), float("inf")])
    cmp = cx.compare(bad_nan, ref, atol=1e-4, rtol=1e-4)
    assert not cmp.ok and cmp.nonfinite and cmp.first_bad_index == [0]
    wrong_inf = torch.tensor([1.0, 100.0, float("nan"), -float("inf")])
    assert not cx.compare(wrong_inf, ref, atol=1e-4, rtol=1e-4).ok


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize(("atol", "rtol"), [(1e-5, 1e-5), (1e-2, 0.0), (1e-30, 1e-3), (0.5, 2.0)])
def test_quick_close_never_accepts_what_the_float64_check_refuses(dtype, atol, rtol) -> None:
    gen = torch.Generator().manual_seed(7)
    ref = (torch.randn(4096, generator=gen) * torch.logspace(-4, 3.5, 4096)).to(dtype)  # finite in float16
    bound = atol + rtol * ref.double().abs()
    # Differences at fractions of the float64 bound around 1, where any rounding would show.
    for fraction in (0.5, 0.999, 0.99999, 1.0, 1.00001, 1.001, 2.0):
        cand = (ref.double() + bound * fraction * torch.sign(torch.randn(4096, generator=gen))).to(dtype)
        exact = cx.compare(cand, ref, atol, rtol).ok
        quick = cx.quick_close(cand, ref, atol, rtol)
        assert not quick or exact, (fraction, dtype)
        assert cx.outputs_close(cand, ref, atol, rtol) == exact
    assert cx.quick_close(ref.clone(), ref, atol, rtol)


def test_quick_close_leaves_special_values_and_mixed_inputs_to_the_full_check() -> None:
    ref = torch.tensor([1.0, float("inf"), 3.0])
    assert not cx.quick_close(ref.clone(), ref, 1e-4, 1e-4)  # an infinite reference needs the exact check
    assert cx.outputs_close(ref.clone(), ref, 1e-4, 1e-4)
    finite = torch.tensor([1.0, 2.0, 3.0])
    assert not cx.quick_close(torch.tensor([1.0, float("nan"), 3.0]), finite, 1e-4, 1e-4)
    assert not cx.quick_close(torch.tensor([1.0, float("inf"), 3.0]), finite, 1.0, 1e30)
    assert not cx.quick_close(finite.double(), finite, 1e-4, 1e-4)  # different dtypes
    assert not cx.quick_close(finite.double(), finite.double(), 1e-4, 1e-4)  # float64 is not screened
    assert not cx.quick_close(finite, finite, 0.0, 1e-4)  # atol 0 could underflow in float32
    assert not cx.quick_close(finite.long(), finite.long(), 1e-4, 1e-4)


def test_quick_close_widens_the_bound_by_the_slack_only() -> None:
    ref = torch.tensor([1.0, 2.0], dtype=torch.float16)
    cand = torch.tensor([1.0, 2.5], dtype=torch.float16)
    assert not cx.quick_close(cand, ref, 1e-3, 1e-3)
    assert cx.quick_close(cand, ref, 1e-3, 1e-3, torch.tensor([0.0, 0.6]))
    assert not cx.quick_close(cand, ref, 1e-3, 1e-3, torch.tensor([0.6, 0.0]))
    assert not cx.quick_close(cand, ref, 1e-3, 1e-3, torch.tensor([0.6]))  # a slack of another shape


def test_outputs_identical_is_nan_aware_and_exact() -> None:
    a = torch.tensor([1.0, float("nan"), -0.0])
    assert cx.outputs_identical(a, torch.tensor([1.0, float("nan"), 0.0]))
    assert not cx.outputs_identical(a, torch.tensor([1.0, 2.0, 0.0]))
    assert not cx.outputs_identical(a, a.double())
    assert cx.outputs_identical(torch.arange(3), torch.arange(3))
    assert not cx.outputs_identical(torch.arange(3), torch.arange(1, 4))


def test_flatten_outputs_checks_structure() -> None:
    t = torch.ones(2)
    assert len(cx.flatten_outputs((t, t), (t, t))) == 2
    with pytest.raises(cx.OutputCheckError) as info:
        cx.flatten_outputs(t, (t, t))
    assert info.value.kind == "wrong_output_type"
    with pytest.raises(cx.OutputCheckError) as info:
        cx.flatten_outputs((t,), (t, t))
    assert info.value.kind == "shape_mismatch"
    with pytest.raises(cx.OutputCheckError):
        cx.flatten_outputs(torch.nn.Parameter(t), t)  # subclasses are not plain tensors


class _TaskModule:
    def get_inputs(self):
        return [torch.rand(4, 8), torch.randint(0, 5, (4,)), 3]


def test_make_inputs_is_seeded_and_perturbs_only_floats() -> None:
    module = _TaskModule()
    device = torch.device("cpu")
    a = cx.make_inputs(module, 11, "task", device)
    b = cx.make_inputs(module, 11, "task", device)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) and a[2] == 3
    for distribution in cx.DISTRIBUTIONS[1:]:
        p = cx.make_inputs(module, 11, distribution, device)
        assert p[0].shape == a[0].shape and p[0].dtype == a[0].dtype
        assert not torch.equal(p[0], a[0])
        assert torch.equal(p[1], a[1]) and p[2] == 3  # integers and scalars untouched
    uniform01 = a[0]
    shifted = cx.make_inputs(module, 12, "shifted", device)[0]
    assert (uniform01 >= 0).all() and not (shifted >= 0).all()  # not only uniform [0, 1)


def test_trial_distributions_vary() -> None:
    import random

    rng = random.Random(0)
    seen = {cx.trial_distribution(t, rng) for t in range(1, 9)}
    assert cx.trial_distribution(0, rng) == "task"
    assert len(seen) >= 3


def test_aliasing_and_mutation_helpers() -> None:
    x = torch.randn(5)
    assert x.untyped_storage().data_ptr() in cx.storage_ptrs([x])
    assert x[1:].untyped_storage().data_ptr() in cx.storage_ptrs([x])  # a view shares the storage
    y = x.clone()
    y[0] += 1
    assert cx.inputs_equal([x, 1], [y, 1]) == [0]
    assert cx.inputs_equal([x], [x.clone()]) == []


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


def test_live_path_check_refuses_re_exported_modules() -> None:
    """A library module re-exporting a forbidden one, and modules handed around as values."""
    import torch.nn.functional  # noqa: F401

    from ascend_kernel_gym.evaluation.errors import StageError
    from ascend_kernel_gym.evaluation.livecheck import check_live_paths

    check_live_paths(["torch.nn.functional.relu", "torch.empty", "triton.cdiv"], ["torch.nn.functional.relu"])
    with pytest.raises(StageError, match="forbidden"):
        check_live_paths(["torch.nn.functional.np"])  # numpy, re-exported by torch.nn.functional
    with pytest.raises(StageError, match="used as a value"):
        check_live_paths(["typing.collections"], ["typing.collections"])  # ``[typing.collections][0]``
    check_live_paths(["triton.language.float32"], ["triton.language.float32"])  # a value, not a module
    with pytest.raises(StageError, match="used as a value"):
        check_live_paths(["torch.nn"], ["torch.nn"])
    # A library module re-exported under another module is judged by its own name.
    with pytest.raises(StageError, match=r"`torch\.save`"):
        check_live_paths(["torch.nn.functional.torch.save"])
    with pytest.raises(StageError, match=r"torch\.utils"):
        check_live_paths(["torch.nn.functional.torch.utils.data"])
    check_live_paths(["torch.nn.functional.torch.empty", "torch.nn.functional.relu", "torch.nn.Module"])


# --- the float16 reference's own rounding error --------------------------------------------------------


def _fp16_chain(x: torch.Tensor) -> torch.Tensor:
    """Rounds every intermediate in float16: far from the true value for some elements."""
    return (x * 37.0 + 1000.0) - 1000.0


def test_precision_slack_is_the_float16_references_own_error() -> None:
    x = torch.linspace(-3, 3, 4096, dtype=torch.float16)
    ref = _fp16_chain(x)
    ref_hi = _fp16_chain(x.float())
    slack = cx.precision_slack(ref, ref_hi)
    assert slack is not None and len(slack) == 1 and slack[0].dtype == torch.float32
    expected = (ref.double() - ref_hi.double()).abs().float()
    assert torch.equal(slack[0], expected) and float(expected.max()) > 0.1
    exact = ref_hi.half()  # what a candidate computing in float32 and rounding once returns
    assert not cx.compare(exact, ref, 1e-2, 1e-2).ok
    assert cx.compare(exact, ref, 1e-2, 1e-2, slack[0]).ok
    assert cx.outputs_close((exact, exact), (ref, ref), 1e-2, 1e-2, slack * 2)
    wrong = exact + 0.5
    assert not cx.compare(wrong, ref, 1e-2, 1e-2, slack[0]).ok


def test_precision_slack_skips_float32_outputs_non_finite_values_and_mismatched_structures() -> None:
    ref32 = torch.ones(4)
    assert cx.precision_slack(ref32, ref32 * 2) == [None]
    ref = torch.tensor([1.0, float("inf"), 2.0], dtype=torch.float16)
    hi = torch.tensor([1.5, 3.0, float("nan")])
    slack = cx.precision_slack(ref, hi)
    assert slack is not None and slack[0].tolist() == [0.5, 0.0, 0.0]
    assert cx.precision_slack((ref, ref), ref.float()) is None
    assert cx.has_low_precision((ref32, [ref])) and not cx.has_low_precision(ref32)
    assert [t.dtype for t in cx.upcast([ref, ref32, 3])[:2]] == [torch.float32, torch.float32]


# --- candidate outputs and models are read without running their code (red-team round 2: F4, F5, F7) ----


class _Tripwire(torch.nn.Module):
    """A model whose every state-dict / parameter method and hook records that it ran."""

    def __init__(self) -> None:
        super().__init__()
        self.ran: list[str] = []
        self.weight = torch.nn.Parameter(torch.randn(3))
        self.register_buffer("running", torch.zeros(3))
        self.register_buffer("scratch", torch.zeros(2), persistent=False)
        self.inner = torch.nn.Linear(2, 2)
        self.register_state_dict_pre_hook(lambda *a, **k: self.ran.append("pre_hook"))
        self._register_state_dict_hook(lambda *a, **k: self.ran.append("hook"))

    def _save_to_state_dict(self, destination, prefix, keep_vars) -> None:
        self.ran.append("_save_to_state_dict")

    def state_dict(self, *args, **kwargs):
        self.ran.append("state_dict")
        return {}

    def named_parameters(self, *args, **kwargs):
        self.ran.append("named_parameters")
        return iter(())

    def parameters(self, *args, **kwargs):
        self.ran.append("parameters")
        return iter(())

    def buffers(self, *args, **kwargs):
        self.ran.append("buffers")
        return iter(())

    def children(self):
        self.ran.append("children")
        return iter(())


def test_storage_ptrs_of_a_model_run_none_of_its_methods() -> None:
    model = _Tripwire()
    ptrs = cx.storage_ptrs(model)
    assert model.ran == []
    expected = [model.weight, model.running, model.scratch, model.inner.weight, model.inner.bias]
    assert {cx.storage_ptr(t) for t in expected} == ptrs  # parameters, both buffers, submodule parameters
    assert model.ran == []
    torch.nn.Module.state_dict(model)  # the tripwires work: the base-class state_dict does run them
    assert "_save_to_state_dict" in model.ran and "pre_hook" in model.ran


def test_module_tensors_skips_tables_that_are_not_dicts_and_survives_cycles() -> None:
    outer = torch.nn.Module()
    inner = torch.nn.Module()
    inner.w = torch.nn.Parameter(torch.ones(2))
    outer.inner = inner
    inner._modules["loop"] = outer  # a cycle
    vars(outer)["_buffers"] = ["not", "a", "dict"]
    assert [t is inner.w for t in cx.module_tensors(outer)] == [True]


class _RecordingList(list):
    touched = False

    def __iter__(self):
        _RecordingList.touched = True
        raise ValueError("candidate code ran")

    def __len__(self):
        _RecordingList.touched = True
        raise ValueError("candidate code ran")


class _RecordingTuple(tuple):
    def __iter__(self):
        _RecordingList.touched = True
        return super().__iter__()


def test_plain_output_copies_exact_containers_only() -> None:
    a, b = torch.ones(2), torch.zeros(3)
    out = cx.plain_output([a, (b, 2.5)])
    assert type(out) is list and type(out[1]) is tuple
    assert out[0] is a and out[1][0] is b and out[1][1] == 2.5
    source = [a, b]
    copied = cx.plain_output(source)
    assert copied == [a, b] and copied is not source  # a new container: later changes to the candidate's don't count
    assert cx.plain_output(a) is a
    assert cx.plain_output((a, None)) == (a, None)  # ``(out, None)`` where the reference returns that

    _RecordingList.touched = False
    for bad, what in [
        (_RecordingList([a]), "Boom-like list subclass"),
        ((a, _RecordingList([b])), "nested list subclass"),
        (_RecordingTuple((a, b)), "tuple subclass"),
        ({"out": a}, "dict"),
        (torch.nn.Parameter(a), "tensor subclass"),
    ]:
        with pytest.raises(cx.OutputCheckError) as info:
            cx.plain_output(bad)
        assert info.value.kind == "wrong_output_type", what
    assert not _RecordingList.touched, "the harness ran a method of the candidate's container"
    with pytest.raises(cx.OutputCheckError, match=r"output\[1\] is an instance of _RecordingList \(a list subclass\)"):
        cx.plain_output((a, _RecordingList([b])))
    loop: list = [a]
    loop.append(loop)
    with pytest.raises(cx.OutputCheckError, match="nests"):
        cx.plain_output(loop)


def test_check_output_tensors_refuses_non_dense_tensors() -> None:
    plain = torch.ones(2)
    assert cx.check_output_tensors((plain, 3)) == [plain]
    cases = {
        "sparse_coo": torch.empty((3, 3), layout=torch.sparse_coo),
        "sparse_csr": torch.eye(3).to_sparse_csr(),
        "carries Python attributes": torch.ones(2),
    }
    cases["carries Python attributes"].note = "hidden"
    for expected, tensor in cases.items():
        with pytest.raises(cx.OutputCheckError, match=expected) as info:
            cx.check_output_tensors((plain, tensor))
        assert info.value.kind == "wrong_output_type"
        assert "output[1]" in info.value.message
    meta = torch.empty(2, device="meta")
    assert cx.check_output_tensors(meta) == [meta]  # refused later, by the device check


def test_output_leaves_follow_flatten_outputs() -> None:
    t = torch.ones(2)
    value = (t, [t.clone(), 1.0])
    reference = (t, [t, 1.0])
    assert [label for label, _ in cx.output_leaves(value)] == [
        label for _, _, label in cx.flatten_outputs(value, reference)
    ]
    assert [label for label, _ in cx.output_leaves(t)] == ["output"]


def test_detach_copy_builds_plain_containers() -> None:
    ref = torch.max(torch.tensor([[1.0, 3.0], [4.0, 2.0]]), dim=1)  # a torch.return_types structseq
    copy = cx.detach_copy(ref)
    assert type(copy) is tuple and torch.equal(copy[0], ref.values) and copy[0] is not ref.values
    assert type(cx.detach_copy([torch.ones(1)])) is list


# --- the child's result: every free text is scrubbed (red-team round 2: F9) ----------------------------


def test_child_result_scrubs_warnings_and_hack_reasons(tmp_path) -> None:
    from ascend_kernel_gym.evaluation import child
    from ascend_kernel_gym.evaluation.job import Job
    from ascend_kernel_gym.evaluation.result import ErrorType, EvalResult, Stage
    from ascend_kernel_gym.tasks import get_task

    sandbox = tmp_path / "akg-pool-abc" / "akg-sandbox-def"
    sandbox.mkdir(parents=True)
    leak = f"{sandbox}/kernel.py"

    class Captured(Exception):
        pass

    class Writer:
        def emit(self, result: EvalResult):
            raise Captured(result)

    task = get_task("core/L1/relu")
    result = EvalResult(task_id=task.id, backend="interpreter", profile="small", code_hash="x", stage=Stage.DONE)
    result.error_type = ErrorType.INPUT_MUTATED
    result.error_message = f"at {leak}"
    result.warnings = [f"cost model could not run: ValueError: at {leak}", "plain note"]
    result.hack_reasons = [f"input_mutated: at {leak}"]
    state = child._State(
        job=Job(task=task, code="", code_hash="x", backend="interpreter", profile="small", sandbox=str(sandbox)),
        result=result,
        writer=Writer(),  # type: ignore[arg-type]
        sandbox=str(sandbox),
    )
    with pytest.raises(Captured) as info:
        state.finish()
    sent = info.value.args[0]
    texts = [sent.error_message, *sent.warnings, *sent.hack_reasons]
    assert not any("akg-" in t or str(tmp_path) in t for t in texts), texts
    assert sent.warnings == ["cost model could not run: ValueError: at kernel.py", "plain note"]
    assert sent.hack_reasons == ["input_mutated: at kernel.py"]


def test_module_tensors_compares_no_candidate_key() -> None:
    class Collider:
        compared = False

        def __hash__(self) -> int:
            return hash("_parameters")

        def __eq__(self, other: object) -> bool:
            Collider.compared = True
            return False

    model = torch.nn.Linear(2, 2)
    attrs = vars(model)
    params = attrs.pop("_parameters")
    attrs[Collider()] = "x"  # first in the probe chain of "_parameters"
    attrs["_parameters"] = params  # inserting it compares the keys already
    Collider.compared = False
    assert len(cx.module_tensors(model)) == 2
    assert not Collider.compared


def test_inputs_are_copied_and_compared_through_nested_containers() -> None:
    a, b = torch.randn(3), torch.randn(2)
    inputs = [[a, b], {"k": a}, 4]
    copies = cx.clone_inputs(inputs)
    assert copies[0][0] is not a and torch.equal(copies[0][0], a) and copies[1]["k"] is not a and copies[2] == 4
    assert cx.inputs_equal(copies, inputs) == []
    copies[0][1].zero_()  # a kernel that writes into a tensor of a list input
    assert cx.inputs_equal(copies, inputs) == [0] and not torch.equal(b, copies[0][1])
    perturbed = cx.map_tensors(inputs, lambda x: x + 1)
    assert torch.equal(perturbed[0][1], b + 1) and torch.equal(perturbed[1]["k"], a + 1)


def test_non_dense_inputs_keep_their_strides_and_gaps_read_as_nan() -> None:
    base = torch.randn(4, 8)
    sliced = base[:, ::2]
    copy = cx.clone_layout(sliced)
    assert copy.stride() == sliced.stride() and torch.equal(copy, sliced)
    flat = torch.as_strided(copy, (copy.untyped_storage().nbytes() // 4,), (1,), 0)
    assert torch.isnan(flat[1::2]).all()  # the gaps: a kernel that ignores the strides reads NaN
    expanded = torch.randn(4, 1).expand(4, 3)  # overlapping: copied densely
    assert torch.equal(cx.clone_layout(expanded), expanded)
    gen = torch.Generator().manual_seed(0)
    assert cx.perturb(sliced, "normal", gen).stride() == sliced.stride()


def test_integer_outputs_must_match_exactly() -> None:
    ref = torch.tensor([2_000_000, 5, 0])
    assert not cx.compare(ref + torch.tensor([1, 0, 0]), ref, atol=1e-4, rtol=1e-4).ok  # within rtol * |ref|
    assert cx.compare(ref.clone(), ref, atol=1e-4, rtol=1e-4).ok
    flags = torch.tensor([True, False])
    assert not cx.compare(~flags, flags, atol=1.0, rtol=1.0).ok


def test_none_in_the_reference_output_pairs_with_none() -> None:
    out = torch.ones(2)
    assert [label for *_, label in cx.flatten_outputs((out, None), (out, None))] == ["output[0]"]
    with pytest.raises(cx.OutputCheckError, match="None"):
        cx.flatten_outputs((out, out), (out, None))
    assert cx.outputs_close((out, None), (out, None), 1e-4, 1e-4) and cx.outputs_identical((out, None), (out, None))
    assert cx.outputs_close(2.5, 2.5, 1e-4, 1e-4) and not cx.outputs_identical(None, out)


def test_copy_into_fills_nested_buffers() -> None:
    buffers = [[torch.zeros(2), torch.zeros(1)], {"k": torch.zeros(3)}, 5]
    source = [[torch.ones(2), torch.full((1,), 2.0)], {"k": torch.full((3,), 3.0)}, 5]
    first = buffers[0][0]
    cx.copy_into(buffers, source)
    assert buffers[0][0] is first and torch.equal(first, torch.ones(2))  # in place
    assert float(buffers[0][1]) == 2.0 and torch.equal(buffers[1]["k"], source[1]["k"])


def test_module_buffer_finds_nested_buffers_without_running_module_code() -> None:
    class Block(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("mask", torch.ones(3), persistent=False)
            self.lin = torch.nn.Linear(2, 2)

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.block = Block()
            self.register_buffer("scale", torch.zeros(2))

    net = Net()

    def tripwire(self, name):
        raise AssertionError(f"module code ran for {name}")

    Block.__getattr__ = tripwire  # attribute access through the module would run this
    assert cx.module_buffer(net, "block.mask") is net._modules["block"]._buffers["mask"]
    assert cx.module_buffer(net, "scale") is net._buffers["scale"]
    assert cx.module_buffer(net, "block.lin.weight") is None  # a parameter, not a buffer
    assert cx.module_buffer(net, "missing.mask") is None and cx.module_buffer(net, "block.nothing") is None

    armed = []

    class Sneaky(str):
        def __eq__(self, other):
            if armed:
                raise AssertionError("key code ran")
            return str.__eq__(self, other)

        __hash__ = str.__hash__

    net._buffers[Sneaky("other")] = torch.ones(1)
    net._buffers[Sneaky("scale")] = torch.ones(1)  # collides with "scale"; replaces its value
    armed.append(True)
    assert cx.module_buffer(net, "other") is None  # keys that are not exact strings never match
