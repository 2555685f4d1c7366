"""Varied parameters and buffers (evaluation/param_vary.py)."""

from __future__ import annotations

import torch
import torch.nn as nn

from ascend_kernel_gym.evaluation.param_vary import (
    draw_values,
    floating_slots,
    snapshot,
    write_candidate,
    write_reference,
)


class _Norms(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ln = nn.LayerNorm(16)
        self.bn = nn.BatchNorm1d(16)
        self.act = nn.PReLU()
        self.register_buffer("index", torch.arange(4))
        self.register_buffer("probs", torch.rand(8))
        self.register_buffer("mask", torch.ones(3), persistent=False)


def test_every_floating_tensor_changes_and_keeps_its_constraints() -> None:
    model = _Norms()
    slots = floating_slots(model)
    names = [name for name, _ in slots]
    assert "index" not in names and "bn.num_batches_tracked" not in names  # integers never change
    assert {"ln.weight", "ln.bias", "bn.running_mean", "bn.running_var", "act.weight", "probs", "mask"} <= set(names)
    values = draw_values(slots, seed=5)
    for name, tensor in slots:
        assert values[name].shape == tensor.shape and values[name].dtype == tensor.dtype
        assert not torch.equal(values[name], tensor), name
    assert (values["bn.running_var"] > 0).all() and (values["ln.weight"] > 0).all()
    assert (values["probs"] >= 0).all() and (values["probs"] <= 1).all()
    assert values["ln.bias"].std() > 0.1  # zeros get a spread, not just a shift
    again = draw_values(floating_slots(_Norms()), seed=5)
    assert torch.equal(again["ln.bias"], values["ln.bias"])  # same seed, same values in every process


def test_values_reach_the_candidate_in_place_by_name_without_its_hooks() -> None:
    reference, candidate = _Norms(), _Norms()
    calls = []
    candidate.register_load_state_dict_post_hook(lambda *a: calls.append("hook"))
    weight = candidate.ln.weight
    slots = floating_slots(reference)
    base = snapshot(slots)
    values = draw_values(slots, seed=1)
    write_reference(slots, values)
    assert write_candidate(candidate, values) == []
    assert candidate.ln.weight is weight and torch.equal(weight, reference.ln.weight)
    assert torch.equal(candidate.bn.running_var, values["bn.running_var"]) and not calls
    write_reference(slots, base)
    write_candidate(candidate, base)
    assert torch.equal(reference.ln.weight, torch.ones(16)) and torch.equal(candidate.ln.weight, torch.ones(16))


def test_names_the_candidate_lacks_are_reported() -> None:
    class Renamed(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.norm = nn.LayerNorm(16)

    values = draw_values(floating_slots(nn.Sequential(nn.LayerNorm(16))), seed=2)
    assert sorted(write_candidate(Renamed(), values)) == ["0.bias", "0.weight"]
