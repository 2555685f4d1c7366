"""The candidate's output: plain copies of its structure, checks of its tensors, pairing with the
reference's output.

Imports torch: use only in evaluator children and tests.
"""

from __future__ import annotations

from typing import Any

import torch

from ascend_kernel_gym.evaluation.tensors import storage_nbytes, storage_ptr

#: Tensor methods are called through the class: a candidate can shadow a method with an instance
#: attribute on a tensor it returns or receives (``out.detach = ...``), never on the class.
_TENSOR = torch.Tensor


class OutputCheckError(Exception):
    """A check on the candidate's output failed; ``kind`` is an ErrorType value."""

    def __init__(self, kind: str, message: str, **metrics: Any) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.metrics = metrics


def flatten_outputs(cand: Any, ref: Any) -> list[tuple[torch.Tensor, torch.Tensor, str]]:
    """Pair candidate and reference output tensors; raises OutputCheckError on a structure mismatch."""
    if isinstance(ref, (tuple, list)):
        if not isinstance(cand, (tuple, list)):
            raise OutputCheckError(
                "wrong_output_type",
                f"forward must return a {type(ref).__name__} of {len(ref)} tensors, got {_kind(cand)}",
            )
        if len(cand) != len(ref):
            raise OutputCheckError(
                "shape_mismatch", f"forward returned {len(cand)} outputs, the reference returns {len(ref)}"
            )
        pairs = []
        for i, (c, r) in enumerate(zip(cand, ref, strict=False)):
            pairs.extend((cc, rr, f"output[{i}]" + label[6:]) for cc, rr, label in flatten_outputs(c, r))
        return pairs
    if ref is None:  # ``(out, None)``: the candidate returns None there too
        if cand is not None:
            raise OutputCheckError(
                "wrong_output_type", f"forward must return None where the reference does, got {_kind(cand)}"
            )
        return []
    if not isinstance(ref, torch.Tensor):
        ref = torch.as_tensor(ref)
        if isinstance(cand, (int, float, bool)):
            cand = torch.as_tensor(cand)
    if type(cand) is not torch.Tensor:
        raise OutputCheckError(
            "wrong_output_type",
            f"forward must return exactly a torch.Tensor, got {_kind(cand)}",
        )
    return [(cand, ref, "output")]


def _kind(value: Any) -> str:
    if type(value) is torch.Tensor:
        return "a single torch.Tensor"
    if isinstance(value, torch.Tensor):
        return f"an instance of {type(value).__name__} (a tensor subclass)"
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)} items"
    return f"a value of type {type(value).__name__}"


#: Python scalars an output may hold where the reference returns scalars
SCALAR_TYPES = (int, float, bool)
#: how deep output tuples / lists may nest
MAX_OUTPUT_DEPTH = 16


def _type_name(kind: type) -> str:
    return str(type.__dict__["__name__"].__get__(kind, type))  # no metaclass attribute involved


def plain_output(value: Any, label: str = "output", depth: int = 0) -> Any:
    """A plain copy of a candidate's output structure; runs no code the candidate defined.

    Accepts only exact ``tuple`` / ``list`` containers (rebuilt as new ones), exact
    ``torch.Tensor`` leaves and Python ``int`` / ``float`` / ``bool`` scalars. The type is checked
    before the value is used at all: iterating or measuring a subclass (``__iter__``, ``__len__``,
    ``__getitem__``) would run the candidate's code outside the recorded call. Raises
    :class:`OutputCheckError` (``wrong_output_type``) for anything else.
    """
    kind = type(value)
    if kind is _TENSOR or kind in SCALAR_TYPES or value is None:
        return value
    if kind is tuple or kind is list:
        if depth >= MAX_OUTPUT_DEPTH:
            raise OutputCheckError("wrong_output_type", f"{label} nests tuples / lists more than {depth} deep")
        items = [plain_output(item, f"{label}[{i}]", depth + 1) for i, item in enumerate(value)]
        return tuple(items) if kind is tuple else items
    name = _type_name(kind)
    if issubclass(kind, torch.Tensor):
        what = f"an instance of {name} (a torch.Tensor subclass)"
    elif issubclass(kind, (tuple, list)):
        base = "tuple" if issubclass(kind, tuple) else "list"
        what = f"an instance of {name} (a {base} subclass)"
    else:
        what = f"a value of type {name}"
    raise OutputCheckError(
        "wrong_output_type",
        f"{label} is {what}; forward must return a plain torch.Tensor, or a plain tuple / list of them "
        "shaped like the reference's output (no subclasses)",
    )


def output_leaves(value: Any, label: str = "output") -> list[tuple[str, Any]]:
    """``(label, leaf)`` for the tensors and scalars of a :func:`plain_output` value, depth-first
    (the order and the labels of :func:`flatten_outputs`' pairs)."""
    if type(value) is tuple or type(value) is list:
        return [leaf for i, item in enumerate(value) for leaf in output_leaves(item, f"{label}[{i}]")]
    return [(label, value)]


def check_output_tensors(value: Any) -> list[torch.Tensor]:
    """The tensors of a :func:`plain_output` value, each checked to be a plain dense tensor.

    Refused (``wrong_output_type``): Python attributes on the tensor, a layout other than
    ``torch.strided`` (sparse, mkldnn), quantized and nested tensors, and tensors whose storage
    cannot be read. Meta tensors pass here and fail the device check.
    """
    tensors = []
    for label, leaf in output_leaves(value):
        if type(leaf) is not _TENSOR:
            continue
        try:
            if object.__getattribute__(leaf, "__dict__"):
                raise OutputCheckError(
                    "wrong_output_type",
                    f"{label} carries Python attributes; return a plain tensor written by your kernel",
                )
            layout = leaf.layout
            if layout != torch.strided:
                raise OutputCheckError(
                    "wrong_output_type",
                    f"{label} has layout {str(layout).replace('torch.', '')}; return a dense tensor (the default "
                    "torch.strided layout, from torch.empty / torch.empty_like) written by your kernel",
                )
            if leaf.is_quantized or leaf.is_nested:
                what = "quantized" if leaf.is_quantized else "nested"
                raise OutputCheckError(
                    "wrong_output_type",
                    f"{label} is a {what} tensor; return a plain dense tensor written by your kernel",
                )
            storage_nbytes(leaf)
            storage_ptr(leaf)
        except OutputCheckError:
            raise
        except Exception as exc:  # noqa: BLE001 - an exotic tensor of the candidate's making
            raise OutputCheckError(
                "wrong_output_type",
                f"{label} cannot be read as a plain tensor ({type(exc).__name__}: {str(exc)[:200]}); return a "
                "dense tensor from torch.empty / torch.empty_like written by your kernel",
            ) from None
        tensors.append(leaf)
    return tensors


def detach_copy(value: Any) -> Any:
    """A private copy of an output (so later calls cannot change what we compare)."""
    if isinstance(value, torch.Tensor):
        return _TENSOR.clone(_TENSOR.detach(value))
    if isinstance(value, tuple):
        return tuple(detach_copy(v) for v in value)
    if isinstance(value, list):
        return [detach_copy(v) for v in value]
    return value
