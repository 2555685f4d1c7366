"""Hidden trial inputs and private copies of inputs (evaluation/inputs.py)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from ascend_kernel_gym.evaluation.compare import inputs_equal  # noqa: E402
from ascend_kernel_gym.evaluation.inputs import (  # noqa: E402
    DISTRIBUTIONS,
    clone_inputs,
    clone_layout,
    copy_into,
    describe_trial,
    make_inputs,
    map_tensors,
    perturb,
    trial_schedule,
)


class _TaskModule:
    def get_inputs(self):
        return [torch.rand(4, 8), torch.randint(0, 5, (4,)), 3]


def test_make_inputs_is_seeded_and_perturbs_only_floats() -> None:
    module = _TaskModule()
    device = torch.device("cpu")
    a = make_inputs(module, 11, "task", device)
    b = make_inputs(module, 11, "task", device)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) and a[2] == 3
    for distribution in DISTRIBUTIONS[1:]:
        p = make_inputs(module, 11, distribution, device)
        assert p[0].shape == a[0].shape and p[0].dtype == a[0].dtype
        assert not torch.equal(p[0], a[0])
        assert torch.equal(p[1], a[1]) and p[2] == 3  # integers and scalars untouched
    uniform01 = a[0]
    shifted = make_inputs(module, 12, "shifted", device)[0]
    assert (uniform01 >= 0).all() and not (shifted >= 0).all()  # not only uniform [0, 1)


def test_inputs_are_drawn_as_after_torch_manual_seed_without_formatting_stacks(monkeypatch) -> None:
    """A timing round draws its inputs on the leased device: ``torch.manual_seed`` queued a call
    with a formatted stack for every accelerator not initialised (about 2 ms a round in a child)."""
    import traceback

    module = _TaskModule()
    torch.manual_seed(1234)
    expected = module.get_inputs()
    stacks = []
    real = traceback.format_stack
    monkeypatch.setattr(traceback, "format_stack", lambda *a, **k: stacks.append(1) or real(*a, **k))
    got = make_inputs(module, 1234, "task", torch.device("cpu"))
    assert inputs_equal(got, expected) == [] and got[2] == expected[2]
    assert stacks == []


def test_schedule_always_has_large_and_small_magnitudes_and_varied_parameters() -> None:
    import random

    for seed in range(20):
        specs = trial_schedule(5, random.Random(seed))
        assert specs[0] == specs[0].__class__("task")  # the task's own inputs, parameters as built
        distributions = [s.distribution for s in specs]
        assert "large" in distributions and "small" in distributions
        assert sum(s.vary_params for s in specs) >= 2 and not specs[0].vary_params
        assert all(s.case == "main" for s in specs)
    assert [s.distribution for s in trial_schedule(1, random.Random(0))] == ["task"]
    two = trial_schedule(2, random.Random(0))
    assert two[1].vary_params and two[1].distribution == "large"


def test_schedule_puts_shape_cases_last_and_the_rest_on_the_main_shape() -> None:
    import random

    specs = trial_schedule(5, random.Random(3), ["odd", "wide"])
    assert [s.case for s in specs] == ["main"] * 4 + ["odd"]  # the task's odd sizes come first
    assert not specs[-1].vary_params
    ten = trial_schedule(10, random.Random(3), ["odd", "wide"])
    assert sorted(s.case for s in ten if s.case != "main") == ["odd", "wide"]
    assert trial_schedule(2, random.Random(3), ["odd"])[1].case == "main"  # two trials: no room for a case


def test_value_range_distributions_have_their_ranges() -> None:
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(64, 128)
    large, small = perturb(x, "large", gen), perturb(x, "small", gen)
    assert large.abs().max() > 100 and small.abs().max() < 1e-2 and small.abs().max() > 0
    zeros = perturb(x, "zeros", gen)
    assert (zeros[0] == 0).all() and 0.3 < float((zeros == 0).float().mean()) < 0.7
    negative = perturb(x, "negative", gen)
    assert 0.8 < float((negative < 0).float().mean()) < 0.97
    half = perturb(x.half(), "large", gen)
    assert half.dtype == torch.float16 and torch.isfinite(half).all()


def test_trial_descriptions_name_what_changed() -> None:
    text = describe_trial("large", True, "'odd' (dim=999)")
    assert "large" in text and "parameters" in text and "'odd'" in text
    assert describe_trial("task", False, "main") == "the task's own inputs"


def test_inputs_are_copied_and_compared_through_nested_containers() -> None:
    a, b = torch.randn(3), torch.randn(2)
    inputs = [[a, b], {"k": a}, 4]
    copies = clone_inputs(inputs)
    assert copies[0][0] is not a and torch.equal(copies[0][0], a) and copies[1]["k"] is not a and copies[2] == 4
    assert inputs_equal(copies, inputs) == []
    copies[0][1].zero_()  # a kernel that writes into a tensor of a list input
    assert inputs_equal(copies, inputs) == [0] and not torch.equal(b, copies[0][1])
    perturbed = map_tensors(inputs, lambda x: x + 1)
    assert torch.equal(perturbed[0][1], b + 1) and torch.equal(perturbed[1]["k"], a + 1)


def test_non_dense_inputs_keep_their_strides_and_gaps_read_as_nan() -> None:
    base = torch.randn(4, 8)
    sliced = base[:, ::2]
    copy = clone_layout(sliced)
    assert copy.stride() == sliced.stride() and torch.equal(copy, sliced)
    flat = torch.as_strided(copy, (copy.untyped_storage().nbytes() // 4,), (1,), 0)
    assert torch.isnan(flat[1::2]).all()  # the gaps: a kernel that ignores the strides reads NaN
    expanded = torch.randn(4, 1).expand(4, 3)  # overlapping: copied densely
    assert torch.equal(clone_layout(expanded), expanded)
    gen = torch.Generator().manual_seed(0)
    assert perturb(sliced, "normal", gen).stride() == sliced.stride()


def test_copy_into_fills_nested_buffers() -> None:
    buffers = [[torch.zeros(2), torch.zeros(1)], {"k": torch.zeros(3)}, 5]
    source = [[torch.ones(2), torch.full((1,), 2.0)], {"k": torch.full((3,), 3.0)}, 5]
    first = buffers[0][0]
    copy_into(buffers, source)
    assert buffers[0][0] is first and torch.equal(first, torch.ones(2))  # in place
    assert float(buffers[0][1]) == 2.0 and torch.equal(buffers[1]["k"], source[1]["k"])
