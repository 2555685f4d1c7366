"""Storages and model tensors read without running candidate code (evaluation/tensors.py)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from ascend_kernel_gym.evaluation.tensors import module_buffer, module_tensors, storage_ptr, storage_ptrs  # noqa: E402


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
    ptrs = storage_ptrs(model)
    assert model.ran == []
    expected = [model.weight, model.running, model.scratch, model.inner.weight, model.inner.bias]
    assert {storage_ptr(t) for t in expected} == ptrs  # parameters, both buffers, submodule parameters
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
    assert [t is inner.w for t in module_tensors(outer)] == [True]


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
    assert len(module_tensors(model)) == 2
    assert not Collider.compared


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
    assert module_buffer(net, "block.mask") is net._modules["block"]._buffers["mask"]
    assert module_buffer(net, "scale") is net._buffers["scale"]
    assert module_buffer(net, "block.lin.weight") is None  # a parameter, not a buffer
    assert module_buffer(net, "missing.mask") is None and module_buffer(net, "block.nothing") is None

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
    assert module_buffer(net, "other") is None  # keys that are not exact strings never match
