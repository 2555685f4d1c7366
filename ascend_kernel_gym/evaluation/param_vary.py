"""Varied parameters and buffers: a kernel must use the model's state, not its initial values.

A reference model's default initialisation is often special (LayerNorm's weight is all ones, its
bias all zeros, BatchNorm's running statistics 0 and 1, PReLU's slope 0.25): a kernel that ignores
such a tensor still matches it. In some trials every floating parameter and buffer of the task's
model gets fresh values, drawn from a seed both children share, around the scale of its initial
values and keeping the constraints references rely on:

* a tensor of zeros (a bias, a running mean) gets values spread around zero;
* a tensor whose initial values are all >= 0 (variances, scales, weights of ones) stays positive;
* a tensor whose values lie in [0, 1] and are not all equal (probabilities, masks of weights)
  stays in [0, 1];
* integer and boolean buffers (indices, counters, masks) never change.

The values are written *in place* into the reference's tensors and into the candidate's tensors
of the same qualified names and shapes (no ``load_state_dict``, so no hook of the candidate runs):
a result derived from the parameters at construction (a transposed or standardised copy) is stale
then, and caught. Derive such values in ``forward``, every call (the static stage refuses private
attributes such as a tensor's ``_version``: an input's version number would tell the timing
stage's reloaded arenas from a trial's fresh tensors).

Imports torch: only the zygote's children import this module.
"""

from __future__ import annotations

from typing import Any

import torch

from ascend_kernel_gym.evaluation.tensors import module_parameter

#: a qualified name and its tensor
Slot = tuple[str, torch.Tensor]


def floating_slots(model: Any) -> list[Slot]:
    """The reference's floating parameters and buffers (persistent or not), in registration order."""
    if not isinstance(model, torch.nn.Module):
        return []
    slots: list[Slot] = []
    seen: set[int] = set()
    for name, tensor in [*model.named_parameters(), *model.named_buffers()]:
        if id(tensor) in seen or not (tensor.is_floating_point() and tensor.numel() > 0):
            continue
        seen.add(id(tensor))
        slots.append((name, tensor))
    return slots


def _varied(tensor: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Fresh values for ``tensor``: same shape, around its scale, keeping its sign and range.

    Drawn on the tensor's own device (a model's parameters can be hundreds of millions of
    elements: a CPU draw of those takes seconds per trial in a single-threaded child).
    """
    base = tensor.detach().to(torch.float32)
    low, high = float(base.min()), float(base.max())
    mean = float(base.mean())
    spread = float(base.std()) if base.numel() > 1 else 0.0
    scale = max(spread, abs(mean), 1e-2) if spread or mean else 0.5
    noise = torch.randn(base.shape, generator=gen, device=base.device, dtype=torch.float32)
    if low == high == 0.0:
        out = noise.mul_(0.5)  # zeros (a bias, a running mean): a spread around them
    elif 0.0 <= low and high <= 1.0 and high > low:
        out = torch.rand(base.shape, generator=gen, device=base.device, dtype=torch.float32)  # probabilities stay so
    elif low >= 0.0:
        # Positive: a log-normal around the typical magnitude (ones become 0.3..3; variances stay > 0).
        typical = max(abs(mean), spread, 1e-3)
        out = noise.mul_(0.6).exp_().mul_(typical)
    else:
        out = noise.mul_(scale).add_(mean)
    return out.to(tensor.dtype)


def draw_values(slots: list[Slot], seed: int) -> dict[str, torch.Tensor]:
    """New values (on each tensor's device) for every slot, the same in every process for the same
    seed and device."""
    generators: dict[torch.device, torch.Generator] = {}
    values = {}
    for name, tensor in slots:
        gen = generators.get(tensor.device)
        if gen is None:
            gen = generators[tensor.device] = torch.Generator(device=tensor.device)
            gen.manual_seed(seed)
        values[name] = _varied(tensor, gen)
    return values


def snapshot(slots: list[Slot]) -> dict[str, torch.Tensor]:
    """Copies of the slots' current values (to put them back later)."""
    return {name: tensor.detach().clone() for name, tensor in slots}


def write_reference(slots: list[Slot], values: dict[str, torch.Tensor]) -> None:
    """Write ``values`` into the reference's own tensors, in place."""
    with torch.no_grad():
        for name, tensor in slots:
            if name in values:
                tensor.copy_(values[name].to(tensor.device))


def write_candidate(candidate: Any, values: dict[str, torch.Tensor]) -> list[str]:
    """Write ``values`` into the candidate's same-named, same-shaped parameters and buffers, in place.

    The candidate's tensors are found through the module tables without calling any of its
    methods (:func:`.tensors.module_parameter`) and written through the base class. Returns the
    names the candidate has no matching tensor for (their values cannot reach it).
    """
    missing = []
    if not isinstance(candidate, torch.nn.Module):
        return list(values)
    with torch.no_grad():
        for name, value in values.items():
            target = module_parameter(candidate, name)
            if (
                target is None
                or tuple(torch.Tensor.size(target)) != tuple(value.shape)
                or not torch.Tensor.is_floating_point(target)
            ):
                missing.append(name)
                continue
            torch.Tensor.copy_(target, value.to(target.device))
    return missing
