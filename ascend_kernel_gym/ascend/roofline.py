"""The floor of a task and the reference's costs: what an ideal kernel must move and compute.

:func:`task_roofline` gives the floor for a task (inputs read once, outputs written once, the
reference's matmul-family FLOPs) and the reference's per-operator bytes and FLOPs, from which
:func:`~ascend_kernel_gym.ascend.estimator.estimate` derives an "idealised eager PyTorch"
estimate of the reference and ``est_speedup``. Imports torch only inside functions.
"""

from __future__ import annotations

from typing import Any

__all__ = ["reference_costs", "task_roofline"]


_NO_KERNEL_OPS = frozenset(
    {
        "empty",
        "empty_like",
        "empty_strided",
        "detach",
        "lift_fresh",
        "lift_fresh_copy",
        "alias",
        "_local_scalar_dense",
        "set_",
        "resize_",
        "sym_size",
        "sym_stride",
        "sym_numel",
        "is_same_size",
    }
)


def _flat_tensors(value: Any) -> list[Any]:
    import torch

    out: list[Any] = []

    def visit(v: Any) -> None:
        if isinstance(v, torch.Tensor):
            out.append(v)
        elif isinstance(v, (tuple, list)):
            for item in v:
                visit(item)
        elif isinstance(v, dict):
            for item in v.values():
                visit(item)

    visit(value)
    return out


def _nbytes(t: Any) -> int:
    return int(t.numel()) * int(t.element_size())


def reference_costs(model: Any, inputs: list[Any]) -> dict[str, Any]:
    """Run ``model(*inputs)`` once and record, per ATen operator that launches a kernel, the bytes
    it reads and writes and its FLOPs (matmul family, via ``torch.utils.flop_counter``).

    Returns:
        ``{"ops": [[name, bytes, flops, wide], ...], "min_bytes", "min_flops_16", "min_flops_32",
        "outputs_bytes"}`` where ``wide`` marks fp32 (or wider) operands.
    """
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    try:
        from torch.utils.flop_counter import flop_registry
    except ImportError:  # pragma: no cover
        flop_registry = {}
    ops: list[list[Any]] = []

    class _Counter(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            packet = getattr(func, "overloadpacket", None)
            name = getattr(packet, "__name__", str(func))
            if name in _NO_KERNEL_OPS:
                return out
            schema = getattr(func, "_schema", None)
            returns = getattr(schema, "returns", []) if schema is not None else []
            if returns and all(r.alias_info is not None and not r.alias_info.is_write for r in returns):
                return out  # a view: no data moves
            ins = _flat_tensors((args, kwargs))
            outs = _flat_tensors(out)
            if not ins and not outs:
                return out
            moved = sum(_nbytes(t) for t in ins) + sum(_nbytes(t) for t in outs)
            flops = 0.0
            counter = flop_registry.get(packet) if packet is not None else None
            if counter is not None:
                try:
                    flops = float(counter(*args, **kwargs, out_val=out))
                except Exception:  # noqa: BLE001 - an unexpected signature: count no FLOPs
                    flops = 0.0
            wide = any(t.is_floating_point() and t.element_size() >= 4 for t in ins)
            ops.append([f"aten.{name}", moved, flops, wide])
            return out

    with torch.no_grad(), _Counter():
        outputs = model(*inputs)
    inputs_bytes = sum(_nbytes(t) for t in _flat_tensors(inputs))
    outputs_bytes = sum(_nbytes(t) for t in _flat_tensors(outputs))
    return {
        "ops": ops,
        "min_bytes": int(inputs_bytes + outputs_bytes),
        "outputs_bytes": int(outputs_bytes),
        "min_flops_16": float(sum(o[2] for o in ops if not o[3])),
        "min_flops_32": float(sum(o[2] for o in ops if o[3])),
    }


def task_roofline(
    reference: Any, inputs: list[Any], task_id: str | None = None, on_meta: bool = True
) -> dict[str, Any]:
    """The roofline floor of a task and the reference's per-operator costs.

    The floor's bytes are the inputs read once plus the outputs written once; its FLOPs are the
    reference's matmul-family FLOPs (``torch.utils.flop_counter``; elementwise FLOPs are not
    counted). With ``on_meta`` the reference runs on ``meta`` copies (shapes only, no compute),
    falling back to the real tensors when an operator has no meta kernel.

    Args:
        reference: the task's ``Model`` instance.
        inputs: its inputs (``get_inputs()``).
        task_id: recorded in the result.
        on_meta: try a shape-only run first.
    """
    import copy

    import torch

    costs = None
    if on_meta:
        try:
            meta_model = copy.deepcopy(reference).to("meta") if isinstance(reference, torch.nn.Module) else reference
            meta_inputs = [x.to("meta") if isinstance(x, torch.Tensor) else x for x in inputs]
            costs = reference_costs(meta_model, meta_inputs)
        except Exception:  # noqa: BLE001 - some operators have no meta kernel
            costs = None
    if costs is None:
        costs = reference_costs(reference, inputs)
    costs["task_id"] = task_id
    costs["source"] = "reference forward (aten operators)"
    return costs
