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
    make_inputs,
    map_tensors,
    perturb,
    trial_distribution,
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


def test_trial_distributions_vary() -> None:
    import random

    rng = random.Random(0)
    seen = {trial_distribution(t, rng) for t in range(1, 9)}
    assert trial_distribution(0, rng) == "task"
    assert len(seen) >= 3


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
